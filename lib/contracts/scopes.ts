/**
 * Scopes as data. A role is a fixed set of scopes; an agent token carries its own scopes.
 * One guard, requireScope(), is called first thing by every route, page and action that reads
 * or changes something; it throws AppError("forbidden") so the refusal comes from the server,
 * not from a hidden button. Unclassified roles cannot exist: ROLE_SCOPES is exhaustive.
 */
import { AppError } from "@/lib/errors";

export const SCOPES = [
  "dashboard:read",
  "runs:read",
  "runs:review",
  "runs:submit",
  "audit:read",
  "audit:export",
  "agents:manage",
  "tools:read",
  "tools:manage",
  "inputs:read",
  "policies:read",
  "policies:manage",
  "patterns:read",
  "skills:read",
  "skills:manage",
  "skills:review",
] as const;

export type Scope = (typeof SCOPES)[number];

export const ROLES = ["admin", "reviewer", "compliance"] as const;
export type Role = (typeof ROLES)[number];

export const ROLE_SCOPES = {
  admin: [
    "dashboard:read",
    "runs:read",
    "agents:manage",
    "tools:read",
    "tools:manage",
    "policies:read",
    "policies:manage",
    "patterns:read",
    "skills:read",
    "skills:manage",
  ],
  reviewer: ["dashboard:read", "runs:read", "runs:review", "tools:read", "policies:read", "patterns:read", "skills:read", "skills:review"],
  compliance: ["dashboard:read", "runs:read", "audit:read", "audit:export", "policies:read"],
} as const satisfies Record<Role, readonly Scope[]>;

/** What an agent token gets when none are named. */
export const DEFAULT_AGENT_SCOPES = ["runs:submit", "runs:read", "tools:read", "inputs:read"] as const satisfies readonly Scope[];

export type Actor =
  | { type: "user"; id: string; email: string; role: Role }
  | { type: "agent"; id: string; name: string; ownerId: string; scopes: readonly Scope[] }
  | { type: "system"; name: string };

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

export function scopesOf(actor: Actor): readonly Scope[] {
  switch (actor.type) {
    case "user":
      return ROLE_SCOPES[actor.role];
    case "agent":
      return actor.scopes;
    case "system":
      return SCOPES;
  }
}

export function hasScope(actor: Actor, scope: Scope): boolean {
  return scopesOf(actor).includes(scope);
}

/** Throws forbidden unless the actor holds the scope. */
export function requireScope(actor: Actor | null | undefined, scope: Scope): asserts actor is Actor {
  if (!actor) throw new AppError("unauthorized", "Sign in first.");
  if (!hasScope(actor, scope)) {
    const holder = actor.type === "agent" ? "this agent's token does not hold (an admin can issue one that does)" : "your role does not have";
    throw new AppError("forbidden", `This needs the ${scope} permission, which ${holder}.`, {
      details: { scope },
    });
  }
}

export function actorLabel(actor: Actor): string {
  switch (actor.type) {
    case "user":
      return actor.email;
    case "agent":
      return `agent:${actor.name}`;
    case "system":
      return `system:${actor.name}`;
  }
}
