/**
 * Read model of policy versions for the console: every version, and each proposed version with
 * what it changes against the published one (lines as they are; the page renders them inert, so
 * a hidden character cannot slip a change past the approving admin) and who proposed it.
 */
import "server-only";
import type { Db } from "@/lib/db";
import { diffLines, type LineDiff } from "@/lib/untrusted/diff";

export type PolicyVersionItem = {
  version: number;
  status: string;
  createdAt: string;
  createdBy: string | null;
  publishedAt: string | null;
  publishedBy: string | null;
  lines: number;
};

export type PolicyProposalItem = {
  version: number;
  createdAt: string;
  proposedBy: { id: string; email: string } | null;
  /** Against the published version (against nothing when none is published). */
  change: LineDiff;
};

export async function listPolicyVersions(db: Db): Promise<PolicyVersionItem[]> {
  const rows = await db.policyVersion.findMany({
    orderBy: { version: "desc" },
    include: { createdBy: { select: { email: true } }, publishedBy: { select: { email: true } } },
  });
  return rows.map((row) => ({
    version: row.version,
    status: row.status,
    createdAt: row.createdAt.toISOString(),
    createdBy: row.createdBy?.email ?? null,
    publishedAt: row.publishedAt?.toISOString() ?? null,
    publishedBy: row.publishedBy?.email ?? null,
    lines: row.text.split("\n").length,
  }));
}

export async function listPolicyProposals(db: Db): Promise<PolicyProposalItem[]> {
  const published = await db.policyVersion.findFirst({ where: { status: "published" }, orderBy: { version: "desc" }, select: { text: true } });
  const rows = await db.policyVersion.findMany({
    where: { status: "proposed" },
    orderBy: { version: "desc" },
    include: { createdBy: { select: { id: true, email: true } } },
  });
  return rows.map((row) => ({
    version: row.version,
    createdAt: row.createdAt.toISOString(),
    proposedBy: row.createdBy,
    change: diffLines(published?.text ?? "", row.text),
  }));
}
