// @ts-check
import tseslint from "typescript-eslint";

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
    files: [
      "lib/env.ts",
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
