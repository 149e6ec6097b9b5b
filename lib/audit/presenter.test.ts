import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunStatus } from "@/lib/generated/prisma/enums";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { runTimeline } from "./presenter";
import { describeAction, DESCRIBED_ACTIONS } from "./presenter-actions";
import { recordAudit } from "./record";
import { sha256, tamper } from "./testing";

async function sources(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return entry.name === "generated" ? [] : sources(path);
      return entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") ? [path] : [];
    }),
  );
  return nested.flat();
}

describe("describeAction", () => {
  it("has a sentence for every action the code records", async () => {
    const recorded = new Set(Object.values(RunStatus).map((status) => `run.${status}`));
    for (const file of await sources(join(process.cwd(), "lib"))) {
      const text = await readFile(file, "utf8");
      if (!/recordAudit|action: "/.test(text)) continue;
      for (const [, name] of text.matchAll(/"((?:run|auth|audit|user|agent|agent_token|policy|upstream|tool|tools|inputs|dataset|hold)\.[a-z_]*[a-z])"/g))
        recorded.add(name!);
      for (const [, name] of text.matchAll(/action: "([a-z_]+\.[a-z_]+)"/g)) recorded.add(name!);
    }
    expect(recorded.size).toBeGreaterThan(40);
    expect([...recorded].filter((action) => !DESCRIBED_ACTIONS.includes(action))).toEqual([]);
  });

  it("names the value an event carries, and says when it knows nothing", () => {
    expect(describeAction("run.outcome_recorded", { action: "passed_to_tool" })).toBe("the agent recorded what it did with the result: passed it to a tool");
    expect(describeAction("run.reviewed", { verdict: "request_changes" })).toBe("a reviewer gave a verdict: request changes");
    expect(describeAction("auth.forbidden", { scope: "audit:export" })).toBe("an action was refused: it needs audit:export");
    expect(describeAction("run.reviewed", null)).toBe("a reviewer gave a verdict");
    expect(describeAction("made.up", {})).toBe("made.up (no description for this action)");
  });
});

describe("runTimeline", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  it("names people and agents, describes each event, keeps raw JSON and tool-call payloads (or when they were purged)", async () => {
    const owner = await db.prisma.user.create({ data: { email: "owen@example.com", name: "Owen Owner", role: "admin" } });
    const reviewer = await db.prisma.user.create({ data: { email: "rita@example.com", name: "Rita\u202eReviewer", role: "reviewer" } });
    const agent = await db.prisma.agent.create({ data: { name: "refund-bot", ownerId: owner.id } });
    const run = await db.prisma.run.create({
      data: {
        agentId: agent.id,
        language: "javascript",
        code: "return 1;",
        codeSha256: sha256("return 1;"),
        purpose: "Refund",
        inputsDigest: sha256("[]"),
        requestDigest: sha256("t"),
        status: "succeeded",
      },
    });
    const subject = { type: "run", id: run.id };
    await db.prisma.$transaction(async (tx) => {
      await recordAudit(tx, { actor: { type: "agent", id: agent.id, name: agent.name, ownerId: owner.id, scopes: [] }, action: "run.submitted", subject });
      await recordAudit(tx, {
        actor: { type: "user", id: reviewer.id, email: reviewer.email, role: "reviewer" },
        action: "run.reviewed",
        subject,
        data: { verdict: "approve" },
      });
      await recordAudit(tx, { actor: { type: "system", name: "cli:ops@host" }, action: "run.outcome_recorded", subject, data: { action: "answered_user" } });
      for (const seq of [1, 2]) {
        await tx.runToolCall.create({
          data: {
            runId: run.id,
            seq,
            server: "ledger",
            tool: "issueRefund",
            argsDigest: "a",
            resultDigest: "b",
            args: { invoiceId: `inv-${seq}` },
            result: { ok: true },
            durationMs: 1,
            outcome: "ok",
          },
        });
      }
    });
    await tamper(db.prisma, `UPDATE "RunToolCall" SET args = NULL, result = NULL, "purgedAt" = '2026-10-05T00:00:00Z' WHERE "runId" = '${run.id}' AND seq = 2`);

    const timeline = (await runTimeline(db.prisma, run.id))!;
    expect(timeline.events.map((e) => [e.actor, e.description])).toEqual([
      ["agent refund-bot", "the agent submitted the run"],
      ["Rita\u202eReviewer <rita@example.com>", "a reviewer gave a verdict: approve"],
      ["system cli:ops@host", "the agent recorded what it did with the result: answered the user"],
    ]);
    expect(timeline.events[1]!.actorId).toBe(`user:${reviewer.id}`);
    expect(JSON.parse(timeline.events[1]!.data)).toEqual({ verdict: "approve" });
    expect(timeline.toolCalls.map((c) => [c.args, c.result])).toEqual([
      [JSON.stringify({ invoiceId: "inv-1" }, null, 2), JSON.stringify({ ok: true }, null, 2)],
      ["purged on 2026-10-05 by retention", "purged on 2026-10-05 by retention"],
    ]);
  });
});
