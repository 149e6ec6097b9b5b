/**
 * Agents and their bearer tokens.
 *
 * Guarantees: a token's secret is returned exactly once, by createAgent/issueAgentToken, and only its
 * sha256 is stored; revoking an agent revokes every token it has and stops its runs (cancels those
 * not started, asks running ones to stop); authenticateAgentToken accepts only
 * an unrevoked, unexpired token of an unrevoked agent and answers null for everything else (callers
 * give every failure the same 401, so a caller cannot tell revoked from unknown). Every change is
 * audited in its own transaction.
 */
import { z } from "zod";
import { recordAudit } from "@/lib/audit/record";
import { AppError } from "@/lib/errors";
import type { Db, Tx } from "@/lib/db";
import { DEFAULT_AGENT_SCOPES, isScope, requireScope, type Actor, type Scope } from "@/lib/contracts/scopes";
import type { TokenCache } from "./token-cache";
import { generateAgentToken, hashAgentToken, looksLikeAgentToken } from "./tokens";
import { emailSchema } from "./users";

/** The scopes an agent may hold. */
export const AGENT_SCOPES = ["runs:submit", "runs:read", "tools:read", "inputs:read"] as const satisfies readonly Scope[];

export const newAgentSchema = z
  .object({
    name: z
      .string()
      .trim()
      .regex(/^[a-z0-9][a-z0-9-]{0,62}$/, "must be 1-63 lower-case letters, digits or dashes"),
    ownerEmail: emailSchema,
    scopes: z
      .array(z.enum(AGENT_SCOPES))
      .min(1)
      .refine((scopes) => new Set(scopes).size === scopes.length, "lists a scope more than once")
      .optional(),
    expiresAt: z.date().optional(),
  })
  .strict();

export type NewAgent = z.input<typeof newAgentSchema>;

/** bad_request naming the first field the schema refused, with details.field. */
function firstIssue(error: z.ZodError): AppError {
  const issue = error.issues[0];
  const field = issue?.path.join(".") || null;
  return new AppError("bad_request", `${field ?? "input"} ${issue?.message ?? "is invalid"}`, { details: { field } });
}

export async function createAgent(tx: Tx, actor: Actor, input: NewAgent): Promise<{ agentId: string; name: string; token: string; scopes: Scope[] }> {
  requireScope(actor, "agents:manage");
  const parsed = newAgentSchema.safeParse(input);
  if (!parsed.success) throw firstIssue(parsed.error);
  const { name, ownerEmail, expiresAt } = parsed.data;
  const scopes = [...(parsed.data.scopes ?? DEFAULT_AGENT_SCOPES)];
  const owner = await tx.user.findUnique({ where: { email: ownerEmail }, select: { id: true } });
  if (!owner) throw new AppError("not_found", `No user with email ${ownerEmail}; add the owner first.`);
  if (await tx.agent.findUnique({ where: { name }, select: { id: true } })) {
    throw new AppError("conflict", `An agent named ${name} already exists.`);
  }
  const agent = await tx.agent.create({ data: { name, ownerId: owner.id }, select: { id: true } });
  await recordAudit(tx, {
    actor,
    action: "agent.created",
    subject: { type: "agent", id: agent.id },
    data: { name, ownerId: owner.id },
  });
  const { token } = await issueToken(tx, actor, agent.id, scopes, expiresAt);
  return { agentId: agent.id, name, token, scopes };
}

async function issueToken(tx: Tx, actor: Actor, agentId: string, scopes: Scope[], expiresAt?: Date) {
  const { token, tokenHash, prefix } = generateAgentToken();
  const row = await tx.agentToken.create({
    data: { agentId, tokenHash, prefix, scopes, expiresAt: expiresAt ?? null },
    select: { id: true },
  });
  await recordAudit(tx, {
    actor,
    action: "agent_token.created",
    subject: { type: "agent", id: agentId },
    data: { tokenId: row.id, prefix, scopes, expiresAt: expiresAt?.toISOString() ?? null },
  });
  return { token, tokenId: row.id };
}

/**
 * Revokes an agent and its tokens. Its runs are stopped by the caller in the same transaction
 * (lib/runs/cancel.ts `revokeAgentAndStopRuns`, the function every door calls).
 */
export async function revokeAgent(tx: Tx, actor: Actor, name: string): Promise<{ agentId: string; revokedTokens: number }> {
  requireScope(actor, "agents:manage");
  const now = new Date();
  const updated = await tx.agent.updateMany({ where: { name, revokedAt: null }, data: { revokedAt: now } });
  if (updated.count === 0) {
    const exists = await tx.agent.findUnique({ where: { name }, select: { id: true } });
    throw exists ? new AppError("conflict", `Agent ${name} is already revoked.`) : new AppError("not_found", `No agent named ${name}.`);
  }
  const agent = await tx.agent.findUniqueOrThrow({ where: { name }, select: { id: true } });
  const tokens = await tx.agentToken.updateMany({
    where: { agentId: agent.id, revokedAt: null },
    data: { revokedAt: now },
  });
  await recordAudit(tx, {
    actor,
    action: "agent.revoked",
    subject: { type: "agent", id: agent.id },
    data: { name, revokedTokens: tokens.count },
  });
  return { agentId: agent.id, revokedTokens: tokens.count };
}

/**
 * The agent behind a bearer token, or null when the token is unknown, revoked or expired. With
 * `cache` (the MCP door's, ./token-cache.ts), an accepted token is remembered and recalled until
 * anything about tokens or agents changes.
 */
export async function authenticateAgentToken(db: Db, token: string, cache?: TokenCache): Promise<Extract<Actor, { type: "agent" }> | null> {
  if (!looksLikeAgentToken(token)) return null;
  const tokenHash = hashAgentToken(token);
  let accepted = cache?.recall(tokenHash, new Date());
  if (!accepted) {
    const since = cache?.epoch() ?? null;
    // The token and its agent in one round trip: every MCP request not served from the cache starts here.
    const [row] = await db.$queryRaw<TokenRow[]>`
      SELECT t.id, t.scopes, t."expiresAt", t."lastUsedAt", t."revokedAt", a.id AS "agentId", a.name, a."ownerId", a."revokedAt" AS "agentRevokedAt"
      FROM "AgentToken" t JOIN "Agent" a ON a.id = t."agentId"
      WHERE t."tokenHash" = ${tokenHash}`;
    if (!row || row.revokedAt || row.agentRevokedAt || (row.expiresAt && row.expiresAt <= new Date())) return null;
    accepted = {
      actor: { type: "agent", id: row.agentId, name: row.name, ownerId: row.ownerId, scopes: row.scopes.filter(isScope) },
      tokenId: row.id,
      expiresAt: row.expiresAt,
      lastUsedAt: row.lastUsedAt,
    };
    cache?.remember(since, tokenHash, accepted);
  }
  // Last use is informational; refresh it at most once a minute to keep the hot path a read.
  const now = new Date();
  if (!accepted.lastUsedAt || now.getTime() - accepted.lastUsedAt.getTime() > 60_000) {
    // updateMany: a token deleted since it was read is no error here (it is refused from the next request on).
    await db.agentToken.updateMany({ where: { id: accepted.tokenId }, data: { lastUsedAt: now } });
    accepted.lastUsedAt = now;
  }
  return { ...accepted.actor, scopes: [...accepted.actor.scopes] };
}

type TokenRow = {
  id: string;
  scopes: string[];
  expiresAt: Date | null;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
  agentId: string;
  name: string;
  ownerId: string;
  agentRevokedAt: Date | null;
};

export type AgentListItem = {
  id: string;
  name: string;
  owner: string;
  createdAt: string;
  revokedAt: string | null;
  tokens: { prefix: string; scopes: string[]; lastUsedAt: string | null; expiresAt: string | null; revoked: boolean }[];
};

/** Read model for the Agents page and `airlock agent list`. */
export async function listAgents(db: Db): Promise<AgentListItem[]> {
  const agents = await db.agent.findMany({
    orderBy: { createdAt: "asc" },
    include: { owner: { select: { email: true } }, tokens: { orderBy: { createdAt: "asc" } } },
  });
  return agents.map((agent) => ({
    id: agent.id,
    name: agent.name,
    owner: agent.owner.email,
    createdAt: agent.createdAt.toISOString(),
    revokedAt: agent.revokedAt?.toISOString() ?? null,
    tokens: agent.tokens.map((t) => ({
      prefix: t.prefix,
      scopes: t.scopes,
      lastUsedAt: t.lastUsedAt?.toISOString() ?? null,
      expiresAt: t.expiresAt?.toISOString() ?? null,
      revoked: Boolean(t.revokedAt),
    })),
  }));
}
