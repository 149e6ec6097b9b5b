/**
 * verifyAuditExport on exports built here, for what a real log rarely holds: a tool call that
 * answered JSON null (stored as the text `null` with its digest, shown by the export as no answer).
 * Real exports, checkpoints and attacks are in lib/cli/audit-export-verify.test.ts.
 */
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { jsonDigest, sha256Hex } from "@/lib/digest";
import { verifyAuditExport } from "./export-verify";
import { chainHash, GENESIS_HASH } from "./record";
import { toolCallsDigest } from "./seal";

const RUN = "0b1f5c7e-1111-4222-8333-944445555666";
const CODE = "return await tools.ledger.find({});";
const PURPOSE = "find nothing";
const AT = "2026-12-06T01:00:00.000Z";
const COLUMNS = [
  "id",
  "at",
  "actorType",
  "actorId",
  "actorName",
  "actorEmail",
  "action",
  "subjectType",
  "subjectId",
  "subjectName",
  "purpose",
  "code",
  "result",
  "error",
  "toolCalls",
  "data",
  "prevHash",
  "hash",
];

/** A whole log of one run whose one call ended `outcome` and answered nothing shown; the seal digests its result as `sealedResult`. */
function exportOf(outcome: string, sealedResult: string | null): string {
  const call = { seq: 1, tool: "ledger.find", phase: "apply", outcome, args: {}, result: null, error: null };
  const seal = toolCallsDigest([{ seq: 1, server: "ledger", tool: "find", argsDigest: jsonDigest({}), resultDigest: sealedResult, outcome }]);
  const lines: Record<string, unknown>[] = [];
  let prevHash = GENESIS_HASH;
  for (const [action, data, shown] of [
    ["run.submitted", { codeSha256: sha256Hex(CODE), contentDigests: { code: jsonDigest(CODE), purpose: jsonDigest(PURPOSE) } }, { code: CODE }],
    ["run.succeeded", { toolCalls: 1, toolCallsDigest: seal, contentDigests: { result: jsonDigest(null), error: jsonDigest(null) } }, { toolCalls: [call] }],
  ] as const) {
    const chained = { at: new Date(AT), actorType: "system", actorId: "executor", action, subjectType: "run", subjectId: RUN, data };
    const hash = chainHash(prevHash, chained);
    lines.push({
      ...Object.fromEntries(COLUMNS.map((column) => [column, null])),
      ...chained,
      at: AT,
      id: String(lines.length + 1),
      purpose: PURPOSE,
      ...shown,
      prevHash,
      hash,
    });
    prevHash = hash;
  }
  const manifest = {
    kind: "airlock.audit-export",
    version: 2,
    format: "jsonl",
    rows: "events",
    exportedAt: AT,
    exportedBy: "test",
    filters: {},
    scope: "all events",
    auditReads: "included",
    rowCount: lines.length,
    firstEventId: "1",
    lastEventId: String(lines.length),
    timeRange: { from: AT, to: AT },
    chainHead: { id: String(lines.length), hash: prevHash, at: AT },
    columns: COLUMNS,
    timeZone: "UTC",
  };
  return [JSON.stringify({ manifest }), ...lines.map((line) => JSON.stringify(line))].join("\n") + "\n";
}

describe("verifyAuditExport, a call that answered JSON null", () => {
  it("seals as the export shows it: no answer and the answer null read the same", async () => {
    const verdict = await verifyAuditExport(Readable.from([exportOf("ok", jsonDigest(null))]), null);
    expect(verdict).toMatchObject({ status: "unanchored", problems: [], events: 2, toolCallSeals: 1 });
  });

  it("a call that failed (no answer) still seals as none", async () => {
    expect(await verifyAuditExport(Readable.from([exportOf("error", null)]), null)).toMatchObject({ status: "unanchored", problems: [] });
  });

  it("attack: a failed call whose seal says it answered null does not pass as that answer", async () => {
    const verdict = await verifyAuditExport(Readable.from([exportOf("error", jsonDigest(null))]), null);
    expect(verdict.status).toBe("mismatch");
    expect(verdict.problems).toEqual(["event #2 (run.succeeded): the tool calls shown do not match the digest it seals"]);
  });
});
