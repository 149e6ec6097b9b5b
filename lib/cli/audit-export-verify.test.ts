/**
 * `airlock audit verify-export`, as a compliance reviewer runs it on an export someone handed them:
 * the real binary (bin/airlock.mjs, a child process), from another directory, with a DATABASE_URL
 * that points nowhere. The log is a real one: scripts submitted, decided and run end to end
 * (lib/testing/ledger-runtime.ts), a checkpoint signed by `airlock audit checkpoint`, the export
 * written by `airlock audit export --format jsonl`. Each attack edits the export as whoever holds
 * the file could, and must be named.
 */
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Readable } from "node:stream";
import { chainHash } from "@/lib/audit/record";
import { ExportFormatError, verifyAuditExport } from "@/lib/audit/export-verify";
import { tempCheckpoints } from "@/lib/audit/testing";
import type { CheckpointConfig } from "@/lib/audit/checkpoints";
import { submitRun } from "@/lib/intake/submit";
import { getRun } from "@/lib/runs/service";
import { runCli } from "@/lib/testing/cli";
import { startLedgerRuntime, type LedgerRuntime } from "@/lib/testing/ledger-runtime";

let ledger: LedgerRuntime;
let checkpoints: CheckpointConfig;
let dir: string;
let exportText: string;
let checkpointFile: string;
let pub: string;

type Line = Record<string, unknown> & { id: string; action: string; data: Record<string, unknown>; prevHash: string; hash: string };

/** From the reviewer's own directory. */
const airlock = (args: string[], settings: Record<string, string>) => runCli(args, settings, dir);

/** Where the reviewer is: no database, no key of their own. */
const offline = () => ({ DATABASE_URL: "postgresql://nobody@127.0.0.1:1/none", AIRLOCK_DATA_DIR: join(dir, "empty") });
const online = () => ({ DATABASE_URL: ledger.db.url, AIRLOCK_AUDIT_KEY_FILE: checkpoints.keyFile, AIRLOCK_AUDIT_CHECKPOINT_DIR: checkpoints.dir });

function parse(text: string): { manifest: Record<string, unknown>; events: Line[] } {
  const [head, ...rest] = text.trimEnd().split("\n");
  return { manifest: (JSON.parse(head!) as { manifest: Record<string, unknown> }).manifest, events: rest.map((line) => JSON.parse(line) as Line) };
}

function serialize(manifest: Record<string, unknown>, events: readonly Line[]): string {
  return [JSON.stringify({ manifest }), ...events.map((event) => JSON.stringify(event))].join("\n") + "\n";
}

/** Writes a copy of the export after `edit` and verifies it (anchored unless told otherwise). */
async function verifyEdited(name: string, edit: (file: { manifest: Record<string, unknown>; events: Line[] }) => void, anchored = true) {
  const file = parse(exportText);
  edit(file);
  const path = join(dir, `${name}.jsonl`);
  await writeFile(path, serialize(file.manifest, file.events));
  return airlock(["audit", "verify-export", path, ...(anchored ? ["--checkpoint", checkpointFile, "--public-key", pub] : [])], offline());
}

/** Recomputes every hash from event `from` on, as whoever rewrites a log would, and the manifest's head with them. */
function rehashFrom(file: { manifest: Record<string, unknown>; events: Line[] }, from: number): void {
  let prev = file.events[from]!.prevHash;
  for (const event of file.events.slice(from)) {
    event.prevHash = prev;
    event.hash = chainHash(prev, {
      at: new Date(event.at as string),
      actorType: event.actorType as string,
      actorId: event.actorId as string | null,
      action: event.action,
      subjectType: event.subjectType as string,
      subjectId: event.subjectId as string | null,
      data: event.data,
    });
    prev = event.hash;
  }
  const last = file.events.at(-1)!;
  file.manifest.chainHead = { ...(file.manifest.chainHead as object), hash: last.hash };
}

async function ranToEnd(code: string): Promise<string> {
  const { runId } = await submitRun(ledger.runtime, ledger.agent, { code, purpose: "count open invoices", language: "javascript" });
  const view = await getRun(ledger.runtime, ledger.agent, { runId, waitSeconds: 30 });
  expect(view.status).toBe("succeeded");
  return runId;
}

beforeAll(async () => {
  ledger = await startLedgerRuntime("export-bot");
  checkpoints = await tempCheckpoints();
  dir = await mkdtemp(join(tmpdir(), "airlock-export-verify-"));
  await ranToEnd(
    `const page = await tools.ledger.listInvoices({ status: "open", limit: 3 });\nreturn { n: page.invoices.length, first: page.invoices[0].id };`,
  );
  await ranToEnd(
    `const a = await tools.ledger.listInvoices({ status: "paid", limit: 2 });\nconst b = await tools.ledger.listRefunds({ limit: 2 });\nreturn a.invoices.length + b.refunds.length;`,
  );
  // The checkpoint is signed before the last run, so the export holds its event and events after it.
  const signed = await airlock(["audit", "checkpoint", "--json"], online());
  expect(signed.code).toBe(0);
  checkpointFile = (JSON.parse(signed.stdout) as { checkpointFile: string }).checkpointFile;
  await ranToEnd(`return (await tools.ledger.listRefunds({ limit: 1 })).refunds.length;`);
  const exported = await airlock(["audit", "export", "--format", "jsonl"], online());
  expect(exported.code).toBe(0);
  exportText = exported.stdout;
  const key = await airlock(["audit", "public-key"], online());
  pub = join(dir, "airlock-audit.pub.pem");
  await writeFile(pub, key.stdout);
}, 120_000);
afterAll(() => ledger?.close());

describe("airlock audit verify-export", () => {
  it("checks a whole export offline: OK anchored by a signed checkpoint, UNANCHORED without one", async () => {
    const path = join(dir, "audit.jsonl");
    await writeFile(path, exportText);
    const { events } = parse(exportText);
    const seals = events.filter((event) => typeof event.data.toolCallsDigest === "string").length;
    expect(seals).toBeGreaterThanOrEqual(2);

    const anchored = await airlock(["audit", "verify-export", path, "--checkpoint", checkpointFile, "--public-key", pub], offline());
    expect(anchored.stderr).toBe("");
    expect(anchored.code).toBe(0);
    expect(anchored.stdout).toMatch(
      new RegExp(
        `^OK: ${path}: ${events.length} event\\(s\\): hashes, one unbroken chain, the manifest, and ${seals} tool-call seal\\(s\\) .*every event from genesis to #\\d+ is the log the checkpoint of .* signed`,
      ),
    );
    expect(anchored.stdout).toMatch(/note: the events after #\d+ are protected by the hash chain only/);
    // What the log cannot prove is said, not implied.
    expect(anchored.stdout).toMatch(/note: not proven by the log: the names beside the ids .* and tool calls' phase and error text/);

    const unanchored = await airlock(["audit", "verify-export", path], offline());
    expect(unanchored.code).toBe(0);
    expect(unanchored.stdout).toMatch(/^UNANCHORED: .*no signed checkpoint ties them to Airlock's signing key/);
  }, 60_000);

  it("attack: a run's result changed in the export is named", async () => {
    const { code, stderr } = await verifyEdited("result", ({ events }) => {
      const end = events.find((event) => event.action === "run.succeeded" && typeof event.result === "object")!;
      end.result = { ...(end.result as object), n: 99 };
    });
    expect(code).toBe(1);
    expect(stderr).toMatch(/^MISMATCH: .*\n {2}event #\d+ \(run\.succeeded\): the result shown does not match the digest the event carries\n/);
  }, 30_000);

  it("attack: a tool call's arguments changed are named by the run's seal", async () => {
    const { code, stderr } = await verifyEdited("call", ({ events }) => {
      const sealed = events.find((event) => Array.isArray(event.toolCalls) && event.toolCalls.length > 0)!;
      const [call] = sealed.toolCalls as { args: Record<string, unknown> }[];
      call!.args = { ...call!.args, limit: 500 };
    });
    expect(code).toBe(1);
    expect(stderr).toMatch(/the tool calls shown do not match the digest it seals/);
  }, 30_000);

  it("attack: a result hidden behind a purge notice no run.purged event names is named", async () => {
    const { code, stderr } = await verifyEdited("purged", ({ events }) => {
      events.find((event) => event.action === "run.succeeded")!.result = "purged on 2026-01-01 by retention";
    });
    expect(code).toBe(1);
    expect(stderr).toMatch(/the result is shown as purged, but no run\.purged event of run [0-9a-f-]{36} in the file names it/);
  }, 30_000);

  it("attack: a script's code changed on its submission is named", async () => {
    const { code, stderr } = await verifyEdited("code", ({ events }) => {
      const submitted = events.find((event) => event.action === "run.submitted")!;
      submitted.code = `${submitted.code as string}\nawait tools.ledger.issueRefund({ invoiceId: "inv_0001" });`;
    });
    expect(code).toBe(1);
    expect(stderr).toMatch(/event #\d+ \(run\.submitted\): the code shown does not match the digest the event carries/);
    expect(stderr).toMatch(/the code shown does not match the codeSha256 the event carries/);
  }, 30_000);

  it("attack: a run's purpose changed on a later line than its submission is named", async () => {
    const { code, stderr } = await verifyEdited("purpose", ({ events }) => {
      events.find((event) => event.action === "run.succeeded")!.purpose = "routine cleanup";
    });
    expect(code).toBe(1);
    expect(stderr).toMatch(/event #\d+ \(run\.succeeded\): the purpose shown is not the one its run was submitted with/);
  }, 30_000);

  it("attack: an event's data changed without its hash is named", async () => {
    const { code, stderr } = await verifyEdited("decision", ({ events }) => {
      const decided = events.find((event) => event.action === "run.auto_approved")!;
      decided.data = { ...decided.data, reasons: ["approved by the CFO"] };
    });
    expect(code).toBe(1);
    expect(stderr).toMatch(/event #\d+ \(run\.auto_approved\): its hash does not match its fields/);
  }, 30_000);

  it("attack: a log rewritten with every hash recomputed passes as UNANCHORED only; the signed checkpoint names it", async () => {
    const rewrite = ({ events, manifest }: { events: Line[]; manifest: Record<string, unknown> }) => {
      const index = events.findIndex((event) => event.action === "run.auto_approved");
      events[index]!.data = { ...events[index]!.data, reasons: ["approved by the CFO"] };
      rehashFrom({ events, manifest }, index);
    };
    const alone = await verifyEdited("rewritten", rewrite, false);
    expect(alone.code).toBe(0);
    expect(alone.stdout).toMatch(/^UNANCHORED: /);
    const anchored = await verifyEdited("rewritten-anchored", rewrite);
    expect(anchored.code).toBe(1);
    expect(anchored.stderr).toMatch(/event #\d+ \([a-z._]+\): its hash differs from the one the checkpoint of .* signed \(the log was rewritten\)/);
  }, 30_000);

  it("attack: an event left out of an export of every event is named", async () => {
    const { code, stderr } = await verifyEdited("missing", ({ events }) => {
      events.splice(
        events.findIndex((event) => event.action === "run.auto_approved"),
        1,
      );
    });
    expect(code).toBe(1);
    expect(stderr).toMatch(/the manifest counts \d+ event\(s\), the file holds \d+/);
    expect(stderr).toMatch(/the export is of every event, but the file is not the whole log from genesis/);
  }, 30_000);

  it("a filtered export verifies with its gaps noted, and no checkpoint can anchor it", async () => {
    const exported = await airlock(["audit", "export", "--format", "jsonl", "--agent", "export-bot"], online());
    expect(exported.code).toBe(0);
    const path = join(dir, "filtered.jsonl");
    await writeFile(path, exported.stdout);
    const { code, stdout } = await airlock(["audit", "verify-export", path, "--checkpoint", checkpointFile, "--public-key", pub], offline());
    expect(code).toBe(0);
    expect(stdout).toMatch(/^UNANCHORED: .*\(\d+ gap\(s\): a filtered export\)/);
    expect(stdout).toMatch(/note: filtered export: \d+ place\(s\) where events of the log are left out/);
  }, 60_000);

  it("refuses what is not an events export, a forged checkpoint and malformed arguments, naming each", async () => {
    const csv = await airlock(["audit", "export", "--format", "csv"], online());
    const perRun = await airlock(["audit", "export", "--format", "jsonl", "--per-run"], online());
    const [manifestLine, firstEvent, ...rest] = exportText.split("\n");
    const twice = [manifestLine, firstEvent!.replace(/"hash"\s*:/, '"hash": "0", "hash":'), ...rest].join("\n");
    const cases: [string, string, RegExp][] = [
      ["csv", csv.stdout, /^NOT AN EXPORT: .*line 1: not JSON; an audit export \(airlock audit export --format jsonl\) starts with its manifest/],
      ["per-run", perRun.stdout, /^NOT AN EXPORT: .*a per-run export \(--per-run\) carries no hashes/],
      ["twice", twice, /^NOT AN EXPORT: .*line 2: the key "hash" appears twice in one object/],
      ["empty", "", /^NOT AN EXPORT: .*the file is empty/],
    ];
    for (const [name, text, why] of cases) {
      const path = join(dir, `${name}.txt`);
      await writeFile(path, text);
      const { code, stderr } = await airlock(["audit", "verify-export", path], offline());
      expect({ name, code }).toEqual({ name, code: 1 });
      expect(stderr).toMatch(why);
    }
    const path = join(dir, "audit.jsonl");
    await writeFile(path, exportText);
    const forged = join(dir, "forged-checkpoint.json");
    const checkpoint = JSON.parse(await readFile(checkpointFile, "utf8")) as Record<string, unknown>;
    await writeFile(forged, JSON.stringify({ ...checkpoint, treeSize: (checkpoint.treeSize as number) + 1 }));
    const refused = await airlock(["audit", "verify-export", path, "--checkpoint", forged, "--public-key", pub], offline());
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/cannot anchor anything: signature does not verify/);

    for (const [args, code, why] of [
      [["verify-export"], 2, /give exactly one export FILE/],
      [["verify-export", path, "--public-key", pub], 2, /--public-key checks the signature of a --checkpoint FILE/],
      [["verify-export", path, "--checkpoint", checkpointFile], 2, /pass --public-key PEM/],
      [["verify-export", join(dir, "absent.jsonl")], 1, /cannot read .*absent\.jsonl/],
    ] as const) {
      const answer = await airlock(["audit", ...args], offline());
      expect({ args, code: answer.code }).toEqual({ args, code });
      expect(answer.stderr).toMatch(why);
      // A usage error prints the usage, which names the command.
      if (code === 2) expect(answer.stderr).toContain("airlock audit verify-export FILE [--checkpoint FILE] [--public-key PEM]");
    }
  }, 90_000);
});

describe("verify-export: what a file may not show, and hostile input", () => {
  it("attack: a run's content shown beside an event the export leaves it off is named", async () => {
    const { code, stderr } = await verifyEdited("added-content", ({ events }) => {
      events.find((event) => event.action === "user.created")!.purpose = "approve every refund";
      events.find((event) => event.action === "run.running")!.result = { n: 0 };
      events.find((event) => event.action === "run.analyzed")!.code = "await tools.ledger.issueRefund({});";
      events.find((event) => event.action === "run.queued")!.toolCalls = [];
    });
    expect(code).toBe(1);
    expect(stderr).toMatch(/event #\d+ \(user\.created\): shows a run's purpose, but it is not a run's event/);
    expect(stderr).toMatch(/event #\d+ \(run\.running\): shows result or error/);
    expect(stderr).toMatch(/event #\d+ \(run\.analyzed\): shows code/);
    expect(stderr).toMatch(/event #\d+ \(run\.queued\): shows tool calls/);
  }, 30_000);

  it("attack: a result up to the checkpoint hidden behind a run.purged event forged after it is said, and a forged truncation marker named", async () => {
    const checkpoint = JSON.parse(await readFile(checkpointFile, "utf8")) as { eventId: string };
    const { code, stdout } = await verifyEdited("late-purge", ({ events, manifest }) => {
      const end = events.find((event) => event.action === "run.succeeded" && BigInt(event.id) < BigInt(checkpoint.eventId))!;
      end.result = "purged on 2026-12-06 by retention";
      const last = events.at(-1)!;
      events.push({
        ...last,
        id: String(BigInt(last.id) + 1n),
        action: "run.purged",
        subjectId: end.subjectId,
        prevHash: last.hash,
        result: null,
        error: null,
        toolCalls: null,
        data: { fields: ["result"], purgedToolCalls: [] },
      });
      rehashFrom({ events, manifest }, events.length - 1);
      Object.assign(manifest, {
        rowCount: events.length,
        lastEventId: events.at(-1)!.id,
        chainHead: { ...(manifest.chainHead as object), id: events.at(-1)!.id },
      });
    });
    expect(code).toBe(0);
    expect(stdout).toMatch(
      /note: 1 value\(s\) up to #\d+ are shown as purged on the word of run\.purged events after it, .*\(event #\d+ \(run\.succeeded\): the result\)/,
    );

    const forged = await verifyEdited("forged-marker", ({ events }) => {
      const [call] = events.find((event) => Array.isArray(event.toolCalls) && event.toolCalls.length > 0)!.toolCalls as { args: unknown }[];
      call!.args = { truncated: true, bytes: 12 };
    });
    expect(forged.code).toBe(1);
    expect(forged.stderr).toMatch(/the tool calls shown do not match the digest it seals/);
  }, 30_000);

  it("refuses a line longer than it reads, and a manifest whose first event or columns are not the file's", async () => {
    const [manifestLine] = exportText.split("\n");
    // A line past the limit is refused while it is read (at JavaScript's longest string, readline threw a RangeError from the stream).
    const limit = manifestLine!.length;
    const long = verifyAuditExport(Readable.from([`${manifestLine}\n{"id":"1",`, "x".repeat(limit)]), null, limit);
    await expect(long).rejects.toThrow(ExportFormatError);
    await expect(long).rejects.toThrow(`line 2: longer than ${limit} characters, more than any export writes on one line`);
    const first = await verifyEdited("first", ({ manifest }) => (manifest.firstEventId = "7"), false);
    expect(first.code).toBe(1);
    expect(first.stderr).toMatch(/the manifest's first event is #7, the file's is #1/);
    const columns = await verifyEdited("columns", ({ manifest }) => (manifest.columns = ["id"]), false);
    expect(columns.code).toBe(1);
    expect(columns.stderr).toMatch(/^NOT AN EXPORT: .*the manifest's columns are not those of an events export/);
  }, 30_000);
});
