import { afterEach, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { loadCheckpoints, writeCheckpoint } from "./checkpoints";
import { CompactRange, eventLeafHash } from "./merkle";
import { checkpointAudited } from "./service";
import { append, SYSTEM, tempCheckpoints } from "./testing";
import { verifyAuditChain } from "./verify";

const open: TestDatabase[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((db) => db.drop()));
});

async function fresh() {
  const db = await createTestDatabase();
  open.push(db);
  return { db, checkpoints: await tempCheckpoints() };
}

/** The tree over every event, recomputed from scratch. */
async function treeOfLog(db: TestDatabase) {
  const events = await db.prisma.auditEvent.findMany({ orderBy: { id: "asc" }, select: { id: true, hash: true } });
  const range = CompactRange.empty();
  for (const event of events) range.append(eventLeafHash(event.hash));
  return { size: range.size, root: range.root().toString("hex"), head: events.at(-1)! };
}

describe("the checkpoint job and tree heads", () => {
  it("signs a tree head that covers its own audit event, and signs nothing while nothing is appended", async () => {
    const { db, checkpoints } = await fresh();
    for (let i = 0; i < 5; i++) await append(db.prisma, "test.event", { type: "thing", id: String(i) });

    const first = await checkpointAudited(db.prisma, SYSTEM, checkpoints);
    expect(first.report.ok).toBe(true);
    expect(first.checkpointFile).not.toBeNull();
    const log = await treeOfLog(db);
    const recorded = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "audit.checkpointed" } });
    expect(log.head.id).toBe(recorded.id); // the job's own event is the head it signed
    expect(recorded.data).toMatchObject({ ok: true, checkpointWritten: true, tree: { size: 5 } });
    const [saved] = await loadCheckpoints(checkpoints);
    expect(saved).toMatchObject({ valid: true, checkpoint: { version: 2, eventId: log.head.id.toString(), treeSize: log.size, rootHash: log.root } });

    // An idle minute: nothing signed, nothing recorded.
    const idle = await checkpointAudited(db.prisma, SYSTEM, checkpoints);
    expect(idle).toMatchObject({ report: { ok: true }, checkpointFile: null });
    expect(await db.prisma.auditEvent.count()).toBe(log.size);
    expect(await loadCheckpoints(checkpoints)).toHaveLength(1);

    // New events: the tree is extended from the stored frontier, and equals a full recomputation.
    for (let i = 0; i < 7; i++) await append(db.prisma, "test.later");
    const next = await checkpointAudited(db.prisma, SYSTEM, checkpoints);
    expect(next.report).toMatchObject({ ok: true, from: log.head.id.toString() });
    const extended = await treeOfLog(db);
    const loaded = await loadCheckpoints(checkpoints);
    expect(loaded).toHaveLength(2);
    expect(loaded[1]).toMatchObject({ valid: true, checkpoint: { eventId: extended.head.id.toString(), treeSize: extended.size, rootHash: extended.root } });

    // A whole-chain verification recomputes the tree and checks both heads.
    const whole = await verifyAuditChain(db.prisma, { checkpoints });
    expect(whole).toMatchObject({ ok: true, checkpointsChecked: 2 });
    expect(whole.tree?.root.toString("hex")).toBe(extended.root);
  });

  it("reports a signed tree head that is not the tree of the events (right event, wrong tree)", async () => {
    const { db, checkpoints } = await fresh();
    for (let i = 0; i < 6; i++) await append(db.prisma, "test.event");
    const events = await db.prisma.auditEvent.findMany({ orderBy: { id: "asc" } });
    const target = events[3]!;
    const wrong = CompactRange.empty();
    for (const event of events.slice(0, 3)) wrong.append(eventLeafHash(event.hash)); // leaves out the target itself
    await writeCheckpoint(
      checkpoints,
      { id: target.id, hash: target.hash, at: target.at },
      { size: wrong.size, root: wrong.root(), frontier: wrong.frontier() },
    );
    const report = await verifyAuditChain(db.prisma, { checkpoints });
    expect(report.broken).toMatchObject({ eventId: target.id.toString(), reason: "tree_head_mismatch", detail: expect.stringContaining("3 events") });
  });
});
