/**
 * The dependency-direction rule in eslint.config.js fails on a backwards import: the layer order is
 * enforced by lint, not by convention. Each probe is a real file written into the folder it
 * claims to belong to (the type-aware lint only reads files that exist), linted, then removed.
 */
import { randomBytes } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import { ESLint } from "eslint";
import { describe, expect, it } from "vitest";

const eslint = new ESLint({ cwd: process.cwd() });

async function restrictedImports(path: string, code: string): Promise<string[]> {
  const filePath = path.replace(/\.ts$/, `-${randomBytes(4).toString("hex")}.ts`);
  writeFileSync(filePath, code);
  try {
    const [result] = await eslint.lintFiles([filePath]);
    const messages = result?.messages ?? [];
    expect(messages.filter((m) => m.fatal)).toEqual([]);
    return messages.filter((m) => m.ruleId === "no-restricted-imports").map((m) => m.message);
  } finally {
    rmSync(filePath, { force: true });
  }
}

describe("layer rule", () => {
  it.each([
    ["lib/audit/layer-probe.ts", `import { transitionRun } from "@/lib/runs/states";\nexport const x = transitionRun;\n`, "audit sits below"],
    ["lib/sandbox/layer-probe.ts", `import { ToolBroker } from "@/lib/broker";\nexport const x = ToolBroker;\n`, "sandbox sits below"],
    ["lib/runs/layer-probe.ts", `import { decideRun } from "@/lib/review/service";\nexport const x = decideRun;\n`, "runs sits below"],
    ["lib/contracts/layer-probe.ts", `import { recordAudit } from "@/lib/audit/record";\nexport const x = recordAudit;\n`, "Shared modules import no layer"],
  ])("refuses a backwards import in %s", async (filePath, code, message) => {
    expect(await restrictedImports(filePath, code)).toEqual([expect.stringContaining(message)]);
  });

  it("allows imports down the layers", async () => {
    expect(
      await restrictedImports(
        "lib/runs/layer-probe.ts",
        `import { recordAudit } from "@/lib/audit/record";\nimport { decide } from "@/lib/policy/decide";\nexport const x = [recordAudit, decide];\n`,
      ),
    ).toEqual([]);
  });
});
