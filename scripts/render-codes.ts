/** `npm run docs:codes`: writes docs/codes.md from the code registries in lib/errors.ts. */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { codesMarkdown } from "../lib/errors";

const target = fileURLToPath(new URL("../docs/codes.md", import.meta.url));
writeFileSync(target, codesMarkdown());
console.log(`wrote ${target}`);
