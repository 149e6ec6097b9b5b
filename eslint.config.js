// @ts-check
import tseslint from "typescript-eslint";

/**
 * Dependency direction. Layers from top to bottom; a module may import its own layer and the
 * layers below it, never one above. Everything in lib/ not named here is shared (contracts,
 * untrusted text, db, env, errors, digests) and imports no layer. app/ and components/ sit on top.
 * Tests are exempt: they exercise whole stacks.
 */
const LAYERS = [["mcp", "cli", "demo"], ["intake"], ["skills"], ["review"], ["runs"], ["policy"], ["broker"], ["sandbox"], ["auth"], ["audit"]];
const layerRules = LAYERS.map((layer, index) => {
  const above = LAYERS.slice(0, index).flat();
  return {
    files: layer.map((name) => `lib/${name}/**/*.{ts,tsx,mjs}`),
    ignores: ["**/*.test.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: above.length
            ? [
                {
                  group: above.flatMap((name) => [`@/lib/${name}`, `@/lib/${name}/*`]),
                  message: `${layer.join("/")} sits below ${above.join(", ")} in the layer order (eslint.config.js); move the code or pass it in.`,
                },
              ]
            : [],
        },
      ],
    },
  };
});
const allLayers = LAYERS.flat();
const sharedRule = {
  files: ["lib/**/*.{ts,tsx}"],
  ignores: ["**/*.test.ts", "lib/testing/**", "lib/generated/**", ...allLayers.map((name) => `lib/${name}/**`)],
  rules: {
    "no-restricted-imports": [
      "error",
      {
        patterns: [
          {
            group: allLayers.flatMap((name) => [`@/lib/${name}`, `@/lib/${name}/*`]),
            message: "Shared modules import no layer (eslint.config.js); move the code into the layer that needs it.",
          },
          { group: ["../*"], message: "Import across folders with @/lib/…, so the layer rules see it." },
        ],
      },
    ],
  },
};

export default tseslint.config(
  {
    ignores: ["node_modules/", ".next/", "lib/generated/", "next-env.d.ts", "test-results/", "playwright-report/", ".airlock/"],
  },
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/ban-ts-comment": "error",
      "no-restricted-syntax": [
        "error",
        {
          selector: "MemberExpression[object.name='process'][property.name='env']",
          message: "Read configuration through lib/env.ts only.",
        },
      ],
    },
  },
  {
    // lib/env.ts is the one reader of process.env; build-time configs and test wiring are outside the app.
    // lib/sandbox/child runs inside the sandbox, where it checks that the environment is empty.
    // bin/airlock.mjs only launches the CLI, handing its environment on.
    files: [
      "lib/env.ts",
      "bin/airlock.mjs",
      "lib/sandbox/child/**",
      "prisma.config.ts",
      "playwright.config.ts",
      "scripts/prisma-generate.mjs",
      "e2e/**",
      "lib/testing/**",
      "bench/**",
    ],
    rules: { "no-restricted-syntax": "off" },
  },
  {
    // Type-aware: a promise nobody awaits or marks with `void` is a lost error.
    files: ["**/*.{ts,tsx}"],
    ignores: ["lib/generated/**"],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: { "@typescript-eslint/no-floating-promises": "error" },
  },
  ...layerRules,
  sharedRule,
  {
    // Client code never reaches server modules or the database client.
    files: ["components/**/*.{ts,tsx}"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          // Types are erased at build time; sharing a DTO type with its presenter is safe.
          patterns: [
            { group: ["@/lib/generated/*", "@prisma/*"], message: "Components must not touch the database.", allowTypeImports: true },
            {
              group: ["@/lib/db", "@/lib/db/*", "@/lib/*/service", "@/lib/*/presenter", "@/lib/*/*-presenter"],
              message: "Server modules stay on the server; pass DTOs as props.",
              allowTypeImports: true,
            },
          ],
        },
      ],
    },
  },
);
