/**
 * Policy versions in the database: the published one decides every proposal.
 *
 * Guarantees: exactly one version is published at a time (publishing retires the previous one in
 * the same transaction, audited); a prepared Cedar set is cached per version id, so deciding costs
 * one indexed read; with no published version every proposal is denied with a reason (fail closed).
 */
import { recordAudit } from "@/lib/audit/record";
import type { Actor } from "@/lib/contracts/scopes";
import { requireScope } from "@/lib/contracts/scopes";
import type { Db, Tx } from "@/lib/db";
import { preparePolicySet, type PreparedPolicySet } from "./policy-set";

export type PublishedPolicy = { id: string; version: number; prepared: PreparedPolicySet };

const prepared = new Map<string, PreparedPolicySet>();

export async function publishedPolicy(db: Db | Tx): Promise<PublishedPolicy | null> {
  const row = await db.policyVersion.findFirst({ where: { status: "published" }, orderBy: { version: "desc" } });
  if (!row) return null;
  let set = prepared.get(row.id);
  if (!set) {
    set = preparePolicySet(row.text);
    prepared.set(row.id, set);
  }
  return { id: row.id, version: row.version, prepared: set };
}

async function nextVersion(tx: Tx): Promise<number> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(7231004418)`;
  const last = await tx.policyVersion.findFirst({ orderBy: { version: "desc" }, select: { version: true } });
  return (last?.version ?? 0) + 1;
}

/** Keeps a draft as a version row (not deciding anything), audited. Invalid drafts are kept too. */
export async function saveDraft(tx: Tx, actor: Actor, text: string): Promise<{ id: string; version: number }> {
  requireScope(actor, "policies:manage");
  const version = await nextVersion(tx);
  const row = await tx.policyVersion.create({
    data: { version, text, status: "draft", createdById: actor.type === "user" ? actor.id : null },
    select: { id: true, version: true },
  });
  await recordAudit(tx, { actor, action: "policy.draft_saved", subject: { type: "policy_version", id: row.id }, data: { version } });
  return row;
}

/** Creates a new version from `text` and publishes it at once (the console's, seed's and CLI's path). */
export async function publishPolicyText(tx: Tx, actor: Actor, text: string): Promise<{ id: string; version: number }> {
  requireScope(actor, "policies:manage");
  preparePolicySet(text); // throws a typed validation error with line and column
  const version = await nextVersion(tx);
  const createdById = actor.type === "user" ? actor.id : null;
  await tx.policyVersion.updateMany({ where: { status: "published" }, data: { status: "retired" } });
  const row = await tx.policyVersion.create({
    data: { version, text, status: "published", createdById, publishedById: createdById, publishedAt: new Date() },
    select: { id: true, version: true },
  });
  await recordAudit(tx, {
    actor,
    action: "policy.published",
    subject: { type: "policy_version", id: row.id },
    data: { version, lines: text.split("\n").length },
  });
  return row;
}
