// Prisma CLI configuration. Prisma 7 no longer reads .env; DATABASE_URL is read directly and may
// be unset (generate does not need it). The app itself reads configuration only via lib/env.ts.
import { defineConfig } from "prisma/config";

export default defineConfig({
  schema: "prisma/schema.prisma",
  migrations: { path: "prisma/migrations" },
  datasource: { url: process.env.DATABASE_URL ?? "" },
});
