/**
 * `airlock audit evidence` and `airlock audit verify-evidence`, as a user runs them: the real binary
 * (bin/airlock.mjs, a child process). verify-evidence is given a DATABASE_URL that points nowhere:
 * it must not need one; and it is run from another directory than the project's, as a third party would.
 */
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CheckpointConfig } from "@/lib/audit/checkpoints";
import type { RunEvidence } from "@/lib/audit/evidence-schema";
import { append, seedRun, tempCheckpoints } from "@/lib/audit/testing";
import { REPO_ROOT } from "@/lib/sandbox/host";
import { runCli } from "@/lib/testing/cli";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";

let db: TestDatabase;
let checkpoints: CheckpointConfig;
let dir: string;
let runId: string;

const airlock = (args: string[], settings: Record<string, string>, cwd = REPO_ROOT) => runCli(args, settings, cwd);

/** Offline: no database anywhere, and no data directory with a key in it. */
const offline = () => ({ DATABASE_URL: "postgresql://nobody@127.0.0.1:1/none", AIRLOCK_DATA_DIR: join(dir, "empty") });

beforeAll(async () => {
  db = await createTestDatabase();
  checkpoints = await tempCheckpoints();
  dir = await mkdtemp(join(tmpdir(), "airlock-evidence-cli-"));
  ({ runId } = await seedRun(db.prisma, { calls: 3 }));
  await append(db.prisma, "run.auto_approved", { type: "run", id: runId }, { decision: "allow", policyVersion: null, reasons: [], approvalsRequired: 0 });
  // Where the run stands: its status is the one its latest state event names.
  await append(db.prisma, "run.succeeded", { type: "run", id: runId });
  for (let i = 0; i < 4; i++) await append(db.prisma, "test.event");
}, 60_000);
afterAll(() => db?.drop());

describe("airlock audit evidence / verify-evidence", () => {
  it("exports a run's evidence and checks it offline: OK with the key, UNANCHORED without; a changed argument exits 1 naming it", async () => {
    const settings = { DATABASE_URL: db.url, AIRLOCK_AUDIT_KEY_FILE: checkpoints.keyFile, AIRLOCK_AUDIT_CHECKPOINT_DIR: checkpoints.dir };
    const exported = await airlock(["audit", "evidence", runId], settings);
    expect(exported.stderr).toMatch(new RegExp(`^Evidence for run ${runId}: \\d+ event\\(s\\) proven in the tree head of .*3 tool call\\(s\\)`));
    expect(exported.code).toBe(0);
    const file = join(dir, "run.evidence.json");
    await writeFile(file, exported.stdout);
    const evidence = JSON.parse(exported.stdout) as RunEvidence;
    expect(evidence).toMatchObject({ kind: "airlock.run-evidence", version: 1, run: { id: runId } });
    const event = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "audit.evidence_exported", subjectId: runId } });
    expect(event.actorType).toBe("system");
    expect(event.actorId).toMatch(/^cli:/);

    const pub = join(dir, "airlock-audit.pub.pem");
    const key = await airlock(["audit", "public-key"], settings);
    expect(key.stdout).toMatch(/^-----BEGIN PUBLIC KEY-----\n/);
    await writeFile(pub, key.stdout);

    // Where a third party runs it: their own directory, not the project's.
    const ok = await airlock(["audit", "verify-evidence", file, "--public-key", pub], offline(), dir);
    expect(ok.stderr).toBe("");
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(new RegExp(`^OK: run ${runId}: \\d+ event\\(s\\) proven in the tree head of `));
    // seedRun writes no content digests: what the chain does not cover is said, not hidden.
    expect(ok.stdout).toContain("note: not digested by any event");

    // By default, the key of AIRLOCK_AUDIT_KEY_FILE; with none at all, UNANCHORED (still exit 0).
    expect(await airlock(["audit", "verify-evidence", file], { ...offline(), AIRLOCK_AUDIT_KEY_FILE: checkpoints.keyFile })).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(/^OK: /),
    });
    const unanchored = await airlock(["audit", "verify-evidence", file], offline());
    expect(unanchored.code).toBe(0);
    expect(unanchored.stdout).toMatch(/^UNANCHORED: run .* no public key was given/);

    const tampered = JSON.parse(exported.stdout) as RunEvidence;
    (tampered.content.toolCalls[2]!.args as { page: number }).page = 99;
    const changedFile = join(dir, "changed.evidence.json");
    await writeFile(changedFile, JSON.stringify(tampered));
    const mismatch = await airlock(["audit", "verify-evidence", changedFile, "--public-key", pub], offline());
    expect(mismatch.code).toBe(1);
    expect(mismatch.stdout).toBe("");
    expect(mismatch.stderr).toContain(
      `MISMATCH: run ${runId}: 2 value(s) do not match:\n  the file: its signature does not verify (a value was changed after it was exported)\n  tool call 3 arguments: digest does not match the sealed digest\n`,
    );
  }, 90_000);

  it("refuses a file that is not evidence and one that cannot be read (exit 1, saying why), and bad arguments, a --public-key that is no key among them (exit 2)", async () => {
    const notEvidence = join(dir, "other.json");
    await writeFile(notEvidence, JSON.stringify({ kind: "something-else" }));
    const refused = await airlock(["audit", "verify-evidence", notEvidence], offline());
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^NOT EVIDENCE: .*other\.json: not a run evidence file \(airlock\.run-evidence version 1\): kind: /);
    for (const [args, why] of [[["verify-evidence", join(dir, "missing.json")], /cannot read .*missing\.json/]] as const) {
      const result = await airlock(["audit", ...args], offline());
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(why);
      expect(result.stderr).not.toContain("Usage:");
    }

    for (const args of [["verify-evidence"], ["evidence"]]) {
      const result = await airlock(["audit", ...args], offline());
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("Usage:");
    }
    // OpenSSL's "error:1E08010C:DECODER routines::unsupported" named neither the file nor the flag.
    const notAKey = await airlock(["audit", "verify-evidence", notEvidence, "--public-key", notEvidence], offline());
    expect(notAKey.code).toBe(2);
    expect(notAKey.stderr).toMatch(
      /^airlock: the file given to --public-key, .*other\.json, is not a public key \(PEM\); give the one airlock audit public-key prints\n/,
    );
    expect(notAKey.stderr).toContain("Usage:");
    expect(notAKey.stderr).not.toContain("DECODER");
    expect((await readFile(notEvidence, "utf8")).length).toBeGreaterThan(0);
  }, 90_000);
});
