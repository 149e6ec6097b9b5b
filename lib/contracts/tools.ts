/**
 * What Airlock knows about an upstream tool, and the one reading of its annotations. MCP
 * annotations are the upstream's hints, not guarantees: a tool is read-only only when it says
 * `readOnlyHint: true`; without `destructiveHint: false` a tool that is not read-only counts as
 * destructive; an unknown tool counts as destructive.
 */
import type { DataClass } from "./data-classes";

export type ToolAnnotations = {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
};

export type Effect = "read_only" | "write" | "destructive";

export const EFFECT_RANK = { read_only: 0, write: 1, destructive: 2 } as const satisfies Record<Effect, number>;

/** The server-side facts of one registered tool that analysis and policy rely on. */
/** Why a tool is quarantined: its definition changed, the upstream added it, or its name is listed twice or is not a plain name. */
export type QuarantineReason = "hash_changed" | "new_tool" | "name_collision";

export type ToolFacts = {
  server: string;
  name: string;
  annotations: ToolAnnotations;
  dataClass: DataClass;
  quarantined: boolean;
  quarantineReason?: QuarantineReason | null;
  /** The upstream's JSON Schema for the arguments; statically known arguments are checked against it. */
  inputSchema?: Record<string, unknown>;
};

export function isReadOnly(annotations: ToolAnnotations | undefined): boolean {
  return annotations?.readOnlyHint === true;
}

export function effectOf(annotations: ToolAnnotations | undefined): Effect {
  if (annotations === undefined) return "destructive";
  if (isReadOnly(annotations)) return "read_only";
  return annotations.destructiveHint === false ? "write" : "destructive";
}

/** "server.tool" → its parts (the server is everything before the first dot). */
export function splitToolName(capability: string): { server: string; tool: string } {
  const dot = capability.indexOf(".");
  return dot < 0 ? { server: capability, tool: "" } : { server: capability.slice(0, dot), tool: capability.slice(dot + 1) };
}

/** What must happen before a quarantined tool may be called, by why it is quarantined. */
export function quarantineText(reason: ToolFacts["quarantineReason"]): string {
  switch (reason) {
    case "new_tool":
      return "it is new (the upstream added it), and is quarantined until two admins accept it";
    case "name_collision":
      return "its name is listed twice by its server or is not a plain tool name, so it is quarantined and cannot be accepted";
    default:
      return "its definition changed, and it is quarantined until two admins accept the new one";
  }
}
