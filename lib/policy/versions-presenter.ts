/** Read model of policy versions for the console. */
import "server-only";
import type { Db } from "@/lib/db";

export type PolicyVersionItem = {
  version: number;
  status: string;
  createdAt: string;
  createdBy: string | null;
  publishedAt: string | null;
  publishedBy: string | null;
  lines: number;
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
