/**
 * Test helpers for lib/audit (imported by *.test.ts only): a small, realistic log — users, an
 * agent, a run whose tool calls are sealed by its terminal event — and superuser tampering.
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { PrismaClient } from "@/lib/db";
import { toolCallsDigest } from "@/lib/audit/seal";
import type { CheckpointConfig } from "./checkpoints";
import { insertToolCalls, storedJson } from "./stored-calls";
import { recordAudit } from "./record";
import { createHash } from "node:crypto";

export const SYSTEM = { type: "system", name: "test" } as const;

export function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

export async function tempCheckpoints(): Promise<CheckpointConfig> {
  const dir = await mkdtemp(join(tmpdir(), "airlock-audit-test-"));
  return { keyFile: join(dir, "key.pem"), dir: join(dir, "checkpoints") };
}

export async function append(db: PrismaClient, action: string, subject: { type: string; id?: string } = { type: "thing" }, data: Record<string, unknown> = {}) {
  return db.$transaction((tx) => recordAudit(tx, { actor: SYSTEM, action, subject, data }));
}

/** A review written as lib/review/service.ts writes one: the row and its run.reviewed event in one transaction (the database refuses either alone). */
export async function recordReview(
  db: PrismaClient,
  review: { runId: string; reviewerId: string; verdict: "approve" | "reject" | "request_changes"; comment?: string; createdAt?: Date },
) {
  const comment = review.comment ?? null;
  const reviewer = await db.user.findUniqueOrThrow({ where: { id: review.reviewerId }, select: { email: true, role: true } });
  await db.$transaction(async (tx) => {
    await tx.review.create({ data: { runId: review.runId, reviewerId: review.reviewerId, verdict: review.verdict, comment, createdAt: review.createdAt } });
    await recordAudit(tx, {
      actor: { type: "user", id: review.reviewerId, email: reviewer.email, role: reviewer.role },
      action: "run.reviewed",
      subject: { type: "run", id: review.runId },
      data: { verdict: review.verdict, comment },
    });
  });
}

/** The events intake would have written for a run a test stored straight to the table: run.submitted and, after it, its status. */
export async function recordStoredRun(db: PrismaClient, run: { id: string; status: string; codeSha256: string }) {
  const subject = { type: "run", id: run.id };
  await append(db, "run.submitted", subject, { codeSha256: run.codeSha256 });
  if (run.status !== "submitted") await append(db, `run.${run.status}`, subject);
}

export type SeededRun = { runId: string; userId: string; agentName: string; ownerEmail: string };

let counter = 0;

/** A run of `agentName` with `calls` tool calls, sealed like lib/runs/executor.ts seals them. */
export async function seedRun(
  db: PrismaClient,
  options: {
    code?: string;
    purpose?: string;
    status?: "succeeded" | "failed" | "pending_review";
    decision?: "allow" | "escalate" | "deny";
    calls?: number;
    capabilitySet?: string[];
    dataClasses?: string[];
    logs?: string[];
    createdAt?: Date;
    agentName?: string;
    ownerEmail?: string;
  } = {},
): Promise<SeededRun> {
  counter++;
  const ownerEmail = options.ownerEmail ?? `owner${counter}@example.com`;
  const owner = await db.user.upsert({ where: { email: ownerEmail }, update: {}, create: { email: ownerEmail, name: "Owner", role: "admin" } });
  const agentName = options.agentName ?? `agent-${counter}`;
  const agent = await db.agent.upsert({ where: { name: agentName }, update: {}, create: { name: agentName, ownerId: owner.id } });
  const code = options.code ?? `return await tools.ledger.listInvoices({ status: "open" }); // ${counter}`;
  const run = await db.run.create({
    data: {
      agentId: agent.id,
      language: "javascript",
      code,
      codeSha256: sha256(code),
      purpose: options.purpose ?? "List open invoices",
      inputsDigest: sha256("[]"),
      requestDigest: sha256(`${counter}`),
      status: options.status ?? "succeeded",
      decision: options.decision ?? "allow",
      capabilitySet: options.capabilitySet ?? ["ledger.listInvoices"],
      facts: { effect: "read_only", openWorld: false, dataClasses: options.dataClasses ?? ["internal"], toolCount: 1 },
      execution: {
        wallMs: 1,
        cpuMs: 1,
        peakRssMb: 1,
        toolCalls: 0,
        logs: (options.logs ?? []).map((text) => ({ level: "log", text })),
        flags: [],
        truncated: false,
        artifacts: [],
      },
      result: { ok: true },
      ...(options.createdAt ? { createdAt: options.createdAt } : {}),
    },
  });
  const subject = { type: "run", id: run.id };
  await append(db, "run.submitted", subject, { codeSha256: run.codeSha256 });
  const calls = Array.from({ length: options.calls ?? 0 }, (_, i) => ({
    seq: i + 1,
    server: "ledger",
    tool: "listInvoices",
    readOnly: true,
    phase: "apply" as const,
    args: storedJson({ status: "open", page: i }),
    result: storedJson({ invoices: [{ id: `inv-${i}` }] }),
    durationMs: 3,
    outcome: "ok" as const,
    error: null,
  }));
  const sealed = calls.map((c) => ({ ...c, argsDigest: c.args.digest, resultDigest: c.result.digest }));
  if (options.calls !== undefined) {
    await db.$transaction(async (tx) => {
      if (calls.length) await insertToolCalls(tx, run.id, calls);
      await recordAudit(tx, {
        actor: SYSTEM,
        action: `run.${run.status}`,
        subject,
        data: { toolCalls: calls.length, toolCallsDigest: toolCallsDigest(sealed) },
      });
    });
  }
  return { runId: run.id, userId: owner.id, agentName, ownerEmail };
}

/** Runs SQL as the database superuser with triggers off (session_replication_role = replica). */
export async function tamper(db: PrismaClient, ...statements: string[]): Promise<void> {
  await db.$transaction([db.$executeRawUnsafe(`SET LOCAL session_replication_role = replica`), ...statements.map((sql) => db.$executeRawUnsafe(sql))]);
}
