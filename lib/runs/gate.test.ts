/**
 * Secret redaction by the gate: pure screening, then end to end on real parts (the demo ledger,
 * whose refund ref_007 carries a pasted Stripe key; a strict sandbox; PostgreSQL). The key never
 * reaches the script, the stored tool call, the result or the agent; a secret the script builds
 * itself is redacted from its logs and result; each redaction is named without the secret.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyAuditChain } from "@/lib/audit/verify";
import { submitRun } from "@/lib/intake/submit";
import { emptyGate, type Envelope } from "@/lib/sandbox/types";
import { startLedgerRuntime, type LedgerRuntime } from "@/lib/testing/ledger-runtime";
import { CONTENT_NORMALIZED_FLAG } from "@/lib/untrusted/storable-text";
import { compileToolSchema, issuesText } from "@/lib/broker/schema-check";
import { SECRET_REDACTED_FLAG, screenEnvelope, screenJson, screenMessage } from "./gate";
import { getRun } from "./service";

const KEY = "sk_test_4eC39HqLyjWDarjtT1zdp7dc";
const GITHUB = `ghp_${"a1B2c3D4".repeat(5)}`;

describe("screening", () => {
  it("redacts secrets in a JSON value, naming where and which kind, never the secret", () => {
    const screened = screenJson({ refunds: [{ id: "ref_1", reason: `pasted ${KEY}` }], note: "inv_0001 is fine" }, "toolCall[2].result");
    expect(screened.value).toEqual({ refunds: [{ id: "ref_1", reason: "pasted [REDACTED:stripe_key]" }], note: "inv_0001 is fine" });
    expect(screened.redactions).toEqual([{ where: "toolCall[2].result.refunds[0].reason", kind: "stripe_key" }]);
    expect(JSON.stringify(screened.redactions)).not.toContain("sk_test");
  });

  it("redacts a credential an upstream used as a key, which a schema check's message writes as an escaped JSON Pointer", () => {
    const check = compileToolSchema({ type: "object", properties: { rows: { type: "object", additionalProperties: { type: "number" } } } });
    if (check instanceof Error) throw check;
    const dsn = "postgres://app:Sup3rS3cretPassw0rdX9@db.internal:5432/prod";
    const message = `ledger.table returned output that does not match its outputSchema: ${issuesText(check({ rows: { [dsn]: "oops" } }))}`;
    expect(message).toContain("postgres:~1~1app:Sup3rS3cretPassw0rdX9");
    const screened = screenMessage(new Error(message), "toolCall[1].error");
    expect(screened.value).toBe("ledger.table returned output that does not match its outputSchema: data/rows/[REDACTED:connection_string] must be number");
    expect(screened.redactions).toEqual([{ where: "toolCall[1].error", kind: "connection_string" }]);
    // Text that merely holds a "~1" is left as it was written.
    expect(screenMessage(new Error("version ~1.2 is fine"), "x").value).toBe("version ~1.2 is fine");
  });

  it("screens an envelope's result, logs, error and checks, and flags it", () => {
    const envelope: Envelope = {
      status: "failed",
      result: { token: GITHUB },
      logs: [{ level: "log", text: `using ${GITHUB}` }],
      error: { code: "SCRIPT_ERROR", message: `bad key ${KEY}`, untrusted: true, detail: `Error: bad key ${KEY}\n    at line 2` },
      stats: { wallMs: 1, cpuMs: 1, peakRssMb: 1, toolCalls: 0 },
      flags: [],
      truncated: false,
      isolation: { level: "strict", node: "", layers: { permissionModel: true, bubblewrap: true, prlimit: true, uid: 65534, cgroup: "none" } },
      artifacts: [],
      gate: { ...emptyGate(), checks: [{ kind: "equal", label: `key ${KEY}`, ok: false, message: "x" }] },
    };
    const out = screenEnvelope(envelope, false, [{ where: "toolCall[1].result.a", kind: "jwt" }]);
    expect(JSON.stringify(out)).not.toMatch(/sk_test_|ghp_a1/);
    expect(out.flags).toEqual([SECRET_REDACTED_FLAG]);
    expect(out.gate.redactions.map((r) => r.where)).toEqual([
      "toolCall[1].result.a",
      "result.token",
      "logs[0]",
      "error.message",
      "error.detail",
      "checks[0].label",
    ]);
  });
});

describe("a secret an upstream returns", () => {
  let ledger: LedgerRuntime;
  let runId: string;
  beforeAll(async () => {
    ledger = await startLedgerRuntime("secrets-bot");
    const view = await submitRun(ledger.runtime, ledger.agent, {
      code: `const { refunds } = await tools.ledger.listRefunds({ limit: 50 });
const leaked = refunds.find((r) => r.id === "ref_007");
console.log("made one", "${GITHUB.slice(0, 4)}" + "${GITHUB.slice(4)}");
return { reason: leaked.reason, scriptSawTheKey: leaked.reason.includes("sk_test_") };`,
      purpose: "read a refund reason",
      language: "javascript",
    });
    runId = view.runId;
  }, 90_000);
  afterAll(() => ledger?.close());

  it("never reaches the script, the stored call, the result or the agent; the run says what was redacted", async () => {
    const view = await getRun(ledger.runtime, ledger.agent, { runId, waitSeconds: 30 });
    expect(view.status).toBe("succeeded");
    expect(view.result).toEqual({ reason: "duplicate charge; customer sent their Stripe key [REDACTED:stripe_key] to support", scriptSawTheKey: false });
    expect(view.logs).toEqual([{ level: "log", text: "made one [REDACTED:github_token]" }]);
    expect(view.flags).toContain(SECRET_REDACTED_FLAG);
    const row = await ledger.db.prisma.run.findUniqueOrThrow({ where: { id: runId }, include: { toolCalls: true } });
    expect(JSON.stringify(row, (_key, value: unknown) => (typeof value === "bigint" ? value.toString() : value))).not.toMatch(/sk_test_4eC|ghp_a1B2/);
    expect((row.execution as { gate: { redactions: unknown[] } }).gate.redactions).toEqual([
      { where: expect.stringMatching(/^toolCall\[1\]\.result\.refunds\[\d+\]\.reason$/), kind: "stripe_key" },
      { where: "logs[0]", kind: "github_token" },
    ]);
    expect(await verifyAuditChain(ledger.db.prisma, { checkpoints: null })).toMatchObject({ ok: true });
  });
});

describe("a __proto__ key a script returns", () => {
  let ledger: LedgerRuntime;
  beforeAll(async () => {
    ledger = await startLedgerRuntime("proto-bot");
  }, 90_000);
  afterAll(() => ledger?.close());

  it("is kept as data under a name Prisma stores, in the agent's answer and the stored run alike, and the run says so", async () => {
    const submitted = await submitRun(ledger.runtime, ledger.agent, {
      code: `return JSON.parse('{"__proto__": {"isAdmin": true}, "x": 1}');`,
      purpose: "a result with a __proto__ key",
      language: "javascript",
    });
    const view = await getRun(ledger.runtime, ledger.agent, { runId: submitted.runId, waitSeconds: 30 });
    expect(view.status).toBe("succeeded");
    expect(view.result).toEqual({ "\ufffd__proto__": { isAdmin: true }, x: 1 });
    expect(view.flags).toContain(CONTENT_NORMALIZED_FLAG);
    const row = await ledger.db.prisma.run.findUniqueOrThrow({ where: { id: submitted.runId } });
    expect(row.result).toEqual({ "\ufffd__proto__": { isAdmin: true }, x: 1 });
    expect(await verifyAuditChain(ledger.db.prisma, { checkpoints: null })).toMatchObject({ ok: true });
  });
});
