/**
 * Policy versions in the database: the published one decides every proposal.
 *
 * Guarantees: exactly one version is published at a time (publishing retires the previous one in
 * the same transaction, audited); publishing marks every other waiting proposal `superseded` (it
 * was written against an older policy: approved, it would undo the newer one), named in the
 * `policy.published` event; a prepared Cedar set (with its text's sha256) is cached per
 * version id, so deciding costs one indexed read of the id (none while it is remembered); with no published version every
 * proposal is denied with a reason (fail closed).
 * Four eyes: a person never publishes alone. An admin proposes a version (`policy.proposed`); a
 * different admin approves it, which publishes it (`policy.published`, naming both).
 *
 * Refuses (AppError "forbidden", `details.reason`, recorded by the door as `auth.forbidden`): a
 * person publishing directly (`four_eyes`), an actor that is not a person proposing or approving
 * (`person_required`), the proposer approving their own version (`own_proposal`). Conflicts:
 * approving a version that is not proposed (a superseded one says why: `stale_proposal`), and
 * proposing the text of the published version or of one already waiting. Drafts with errors are
 * refused with line and column.
 */
import { recordAudit } from "@/lib/audit/record";
import type { Actor } from "@/lib/contracts/scopes";
import { requireScope } from "@/lib/contracts/scopes";
import type { Db, Tx } from "@/lib/db";
import type { Remembered } from "@/lib/db/remembered";
import { sha256Hex } from "@/lib/digest";
import { AppError } from "@/lib/errors";
import { preparePolicySet, type PreparedPolicySet } from "./policy-set";

/** The published version: its prepared set, and the sha256 of the text that set was prepared from (what decides). */
export type PublishedPolicy = { id: string; version: number; prepared: PreparedPolicySet; textDigest: string };

const prepared = new Map<string, { set: PreparedPolicySet; textDigest: string }>();

/**
 * The published version. With `remembered` (never inside a transaction, whose snapshot it would
 * not share), which version it is is remembered until the policy versions change
 * (lib/db/remembered.ts).
 */
export async function publishedPolicy(db: Db | Tx, remembered?: Remembered): Promise<PublishedPolicy | null> {
  const current = () => db.policyVersion.findFirst({ where: { status: "published" }, orderBy: { version: "desc" }, select: { id: true, version: true } });
  const row = remembered ? await remembered.read("policy:published", current) : await current();
  if (!row) return null;
  let cached = prepared.get(row.id);
  if (!cached) {
    // The text is read once per version, not once per decision.
    const { text } = await db.policyVersion.findUniqueOrThrow({ where: { id: row.id }, select: { text: true } });
    cached = { set: preparePolicySet(text), textDigest: sha256Hex(text) };
    prepared.set(row.id, cached);
  }
  return { id: row.id, version: row.version, prepared: cached.set, textDigest: cached.textDigest };
}

/** Serializes new versions and publications (an arbitrary constant naming the advisory lock). */
async function lockVersions(tx: Tx): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(7231004418)`;
}

async function nextVersion(tx: Tx): Promise<number> {
  await lockVersions(tx);
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

/** The person behind a proposal or an approval: a system actor or an agent is refused. */
function requirePerson(actor: Actor, doing: string): Extract<Actor, { type: "user" }> {
  if (actor.type === "user") return actor;
  throw new AppError("forbidden", `Only a signed-in admin can ${doing}; with the CLI, name yourself with --as EMAIL.`, {
    details: { reason: "person_required" },
  });
}

/**
 * Creates a new version from `text` and publishes it at once, without a second person: only for
 * Airlock's own system actors (the demo seed's default policy on a first start). People propose.
 */
export async function publishPolicyText(tx: Tx, actor: Actor, text: string): Promise<{ id: string; version: number }> {
  requireScope(actor, "policies:manage");
  if (actor.type !== "system") {
    throw new AppError("forbidden", "A policy version is published by a second admin's approval; propose it instead.", { details: { reason: "four_eyes" } });
  }
  preparePolicySet(text); // throws a typed validation error with line and column
  const version = await nextVersion(tx);
  await tx.policyVersion.updateMany({ where: { status: "published" }, data: { status: "retired" } });
  const superseded = await supersedeWaiting(tx);
  const row = await tx.policyVersion.create({
    data: { version, text, status: "published", publishedAt: new Date() },
    select: { id: true, version: true },
  });
  await recordAudit(tx, {
    actor,
    action: "policy.published",
    subject: { type: "policy_version", id: row.id },
    data: { version, lines: text.split("\n").length, ...(superseded.length > 0 ? { superseded } : {}) },
  });
  return row;
}

/** Marks every proposal still waiting `superseded` (see the header); their version numbers. */
async function supersedeWaiting(tx: Tx): Promise<number[]> {
  const rows = await tx.policyVersion.updateManyAndReturn({ where: { status: "proposed" }, data: { status: "superseded" }, select: { version: true } });
  return rows.map((r) => r.version).sort((a, b) => a - b);
}

/** An admin proposes `text` as the next version; it decides nothing until a second admin approves it. */
export async function proposePolicyText(tx: Tx, actor: Actor, text: string): Promise<{ id: string; version: number }> {
  requireScope(actor, "policies:manage");
  const person = requirePerson(actor, "propose a policy");
  preparePolicySet(text); // throws a typed validation error with line and column
  const version = await nextVersion(tx);
  // A second admin would approve a change that changes nothing, or the same change twice.
  const same = await tx.policyVersion.findFirst({ where: { text, status: { in: ["published", "proposed"] } }, select: { version: true, status: true } });
  if (same) {
    throw new AppError("conflict", `This text is version ${same.version}, ${same.status} already; propose a change to it.`, {
      details: { version: same.version, status: same.status },
    });
  }
  const row = await tx.policyVersion.create({
    data: { version, text, status: "proposed", createdById: person.id },
    select: { id: true, version: true },
  });
  await recordAudit(tx, {
    actor,
    action: "policy.proposed",
    subject: { type: "policy_version", id: row.id },
    data: { version, lines: text.split("\n").length },
  });
  return row;
}

/**
 * A second admin approves proposed version `version`: it is published and the previous published
 * version retired, and every other waiting proposal superseded, in one transaction serialized
 * with every other new or published version. A superseded proposal is refused (conflict): its text
 * was written against an older policy, and publishing it would silently undo the newer one.
 */
export async function approvePolicyVersion(tx: Tx, actor: Actor, version: number): Promise<{ id: string; version: number }> {
  requireScope(actor, "policies:manage");
  const person = requirePerson(actor, "approve a policy");
  await lockVersions(tx);
  const row = await tx.policyVersion.findUnique({ where: { version }, select: { id: true, status: true, text: true, createdById: true } });
  if (!row) throw new AppError("not_found", `No policy version ${version}.`);
  if (row.status === "superseded") {
    const current = await tx.policyVersion.findFirst({ where: { status: "published" }, select: { version: true } });
    throw new AppError(
      "conflict",
      `Version ${version} was waiting when another version was published, so it was written against an older policy; approving it would undo what was published since. Propose the change again on top of version ${current?.version ?? "the published one"}.`,
      { details: { reason: "stale_proposal", published: current?.version ?? null } },
    );
  }
  if (row.status !== "proposed") throw new AppError("conflict", `Version ${version} is ${row.status}; only a proposed version can be approved.`);
  if (row.createdById === person.id) {
    throw new AppError("forbidden", `You proposed version ${version}; a second admin must approve it.`, { details: { reason: "own_proposal" } });
  }
  preparePolicySet(row.text);
  await tx.policyVersion.updateMany({ where: { status: "published" }, data: { status: "retired" } });
  await tx.policyVersion.update({ where: { id: row.id }, data: { status: "published", publishedById: person.id, publishedAt: new Date() } });
  const superseded = await supersedeWaiting(tx);
  await recordAudit(tx, {
    actor,
    action: "policy.published",
    subject: { type: "policy_version", id: row.id },
    data: {
      version,
      lines: row.text.split("\n").length,
      proposedById: row.createdById,
      approvedById: person.id,
      ...(superseded.length > 0 ? { superseded } : {}),
    },
  });
  return { id: row.id, version };
}
