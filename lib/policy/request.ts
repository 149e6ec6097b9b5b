/**
 * The Cedar schema Airlock's policies are written against, and the builder of the one request
 * shape they are evaluated on.
 *
 * principal `Agent::"<id>"` (with its owning `User`), action `Action::"run"` (a script) or
 * `Action::"call"` (one direct call of a read-only tool), resource
 * `Proposal::"submitted"` carrying everything policy may look at: effect class, open world,
 * data classes of tools and inputs (and of the read-only tools), finding codes and counts, the
 * kinds of result checks the script declares, the capability set and the requested limits, and the sandbox isolation level the run is decided on (the level this
 * deployment executes at, lib/runs/isolation.ts). The request's context says which provenance the
 * agent declared with the proposal (`context.provenance`: a model, a prompt, a conversation id,
 * the context it selected) — only whether each is there, never its text. Every attribute is
 * required, so a policy never needs `has`.
 *
 * Guarantees: the request is plain JSON (it can be stored with the decision and replayed
 * against a draft later), and the Proposal is built only from analysis output and server-side
 * facts; nothing in it is taken from the agent's own claims about its script. The context holds
 * the one thing the agent declares (whether it gave provenance), kept apart from the facts.
 *
 * Versioned: every stored request carries `schemaVersion`. A change that adds a Proposal
 * attribute (or a context attribute) bumps POLICY_REQUEST_VERSION and adds, in ADDED_ATTRIBUTES
 * (ADDED_CONTEXT), the value it takes when an older stored request is replayed against a draft
 * (`upgradePolicyRequest`).
 */
import type { EntityJson, EntityUidJson } from "@cedar-policy/cedar-wasm/nodejs";
import type { DataClass } from "@/lib/contracts/data-classes";
import type { ScriptFacts } from "@/lib/contracts/analysis";
import type { Finding } from "@/lib/contracts/analysis";
import type { IsolationLevel, RunLimits } from "@/lib/sandbox/types";

export const POLICY_REQUEST_VERSION = 4;

/** Name under which the schema is pre-parsed inside the Cedar module. */
export const SCHEMA_NAME = `airlock-v${POLICY_REQUEST_VERSION}`;

export const CEDAR_SCHEMA = `// Airlock policy schema v${POLICY_REQUEST_VERSION}. Every attribute is always present.
entity User;

entity Agent = {
  owner: User,
};

entity Proposal = {
  // "read_only" | "write" | "destructive" (unknown tools count as destructive)
  effect: String,
  // true if any tool may reach outside Airlock's registered systems (MCP openWorldHint)
  openWorld: Bool,
  // "server.tool" for every tool the script can call
  tools: Set<String>,
  toolCount: Long,
  // data classes: public, internal, confidential, pii, financial, phi
  toolDataClasses: Set<String>,
  inputDataClasses: Set<String>,
  // toolDataClasses and inputDataClasses together
  dataClasses: Set<String>,
  // data classes of the read-only tools the script can call
  readOnlyDataClasses: Set<String>,
  // kinds of the result checks the script declares: "equal", "rowCount", "sum", "range", "sameUnit"
  checks: Set<String>,
  // finding codes, e.g. "eval_like", "unknown_tool", "type_error"
  findings: Set<String>,
  criticalFindings: Long,
  errorFindings: Long,
  warningFindings: Long,
  unknownTools: Bool,
  quarantinedTools: Bool,
  disallowedImports: Bool,
  // the limits the run is decided on and runs with (lib/sandbox/types.ts RunLimits)
  limits: {
    timeoutMs: Long,
    cpuSeconds: Long,
    heapMb: Long,
    maxToolCalls: Long,
  },
  // the sandbox level runs execute at: "strict" (bubblewrap) or "permission-only" (degraded)
  isolation: String,
};

// run: a script (submit_run); call: one direct call of a tool accepted as read-only (call_tool),
// decided on the Proposal of that one call. Only an allowed call is made; one policy would
// escalate is refused, pointing the agent to submit_run.
action run, call appliesTo {
  principal: Agent,
  resource: Proposal,
  context: {
    // what the agent declared with the proposal (present and not blank), never the text itself
    provenance: {
      hasModel: Bool,
      hasPrompt: Bool,
      hasConversation: Bool,
      hasContext: Bool,
    },
  },
};
`;

export type PolicyRequestInput = {
  agent: { id: string; ownerId: string };
  facts: ScriptFacts;
  findings: readonly Finding[];
  capabilitySet: readonly string[];
  inputDataClasses: readonly DataClass[];
  limits: RunLimits;
  isolation: IsolationLevel;
  /** Which provenance the agent declared; absent means none (every flag false). */
  provenance?: ProvenancePresence;
  /** `run` (a script, the default) or `call` (one direct call, call_tool). */
  action?: "run" | "call";
};

export type ProvenancePresence = { hasModel: boolean; hasPrompt: boolean; hasConversation: boolean; hasContext: boolean };

const NO_PROVENANCE: ProvenancePresence = { hasModel: false, hasPrompt: false, hasConversation: false, hasContext: false };

/** Which of the declared provenance fields are there (a blank string counts as absent). */
export function provenancePresence(provenance: { model?: string; prompt?: string; conversationId?: string; context?: string }): ProvenancePresence {
  const given = (value: string | undefined) => Boolean(value?.trim());
  return {
    hasModel: given(provenance.model),
    hasPrompt: given(provenance.prompt),
    hasConversation: given(provenance.conversationId),
    hasContext: given(provenance.context),
  };
}

export type PolicyRequest = {
  /** POLICY_REQUEST_VERSION when built; requests stored before versioning have none (= 1). */
  schemaVersion?: number;
  principal: EntityUidJson;
  action: EntityUidJson;
  resource: EntityUidJson;
  /** `{}` in requests stored before version 3. */
  context: { provenance?: ProvenancePresence };
  entities: EntityJson[];
};

const sortedUnique = <T extends string>(values: Iterable<T>): T[] => [...new Set(values)].sort();

export function buildPolicyRequest(input: PolicyRequestInput): PolicyRequest {
  const principal = { type: "Agent", id: input.agent.id };
  const owner = { type: "User", id: input.agent.ownerId };
  const resource = { type: "Proposal", id: "submitted" };
  const codes = new Set(input.findings.map((f) => f.code));
  const count = (severity: Finding["severity"]) => input.findings.filter((f) => f.severity === severity).length;
  return {
    schemaVersion: POLICY_REQUEST_VERSION,
    principal,
    action: { type: "Action", id: input.action ?? "run" },
    resource,
    context: { provenance: { ...(input.provenance ?? NO_PROVENANCE) } },
    entities: [
      { uid: owner, attrs: {}, parents: [] },
      { uid: principal, attrs: { owner: { __entity: owner } }, parents: [] },
      {
        uid: resource,
        attrs: {
          effect: input.facts.effect,
          openWorld: input.facts.openWorld,
          tools: sortedUnique(input.capabilitySet),
          toolCount: input.facts.toolCount,
          toolDataClasses: sortedUnique(input.facts.dataClasses),
          inputDataClasses: sortedUnique(input.inputDataClasses),
          dataClasses: sortedUnique([...input.facts.dataClasses, ...input.inputDataClasses]),
          readOnlyDataClasses: sortedUnique(input.facts.readOnlyDataClasses),
          checks: sortedUnique(input.facts.checks),
          findings: sortedUnique(codes),
          criticalFindings: count("critical"),
          errorFindings: count("error"),
          warningFindings: count("warning"),
          unknownTools: codes.has("unknown_tool"),
          quarantinedTools: codes.has("quarantined_tool"),
          disallowedImports: codes.has("disallowed_import"),
          limits: {
            timeoutMs: input.limits.timeoutMs,
            cpuSeconds: input.limits.cpuSeconds,
            heapMb: input.limits.heapMb,
            maxToolCalls: input.limits.maxToolCalls,
          },
          isolation: input.isolation,
        },
        parents: [],
      },
    ],
  };
}

/**
 * Proposal attributes added after version 1, by the version that added them, with the value an
 * older stored request takes for them on replay. Version 2 added `isolation`; requests decided
 * before it replay as `strict`, the default level (a deployment configured for permission-only
 * before then replays as if it had been strict). Version 4 added `readOnlyDataClasses` and
 * `checks`; older requests replay with none (their checks were not looked at then).
 */
const ADDED_ATTRIBUTES: Readonly<Record<number, Readonly<Record<string, unknown>>>> = {
  2: { isolation: "strict" },
  4: { readOnlyDataClasses: [], checks: [] },
};

/**
 * Context attributes added after version 1, likewise. Version 3 added `provenance`; requests
 * decided before it replay as if no provenance had been given (what was given then was not
 * looked at, and the flags cannot be recovered from the request).
 */
const ADDED_CONTEXT: Readonly<Record<number, Readonly<Record<string, unknown>>>> = { 3: { provenance: NO_PROVENANCE } };

/** A stored request brought to the current schema version, for replay against a draft. */
export function upgradePolicyRequest(stored: PolicyRequest): PolicyRequest {
  const from = stored.schemaVersion ?? 1;
  if (from >= POLICY_REQUEST_VERSION) return stored;
  const added: Record<string, unknown> = {};
  const addedContext: Record<string, unknown> = {};
  for (let version = from + 1; version <= POLICY_REQUEST_VERSION; version++) {
    Object.assign(added, ADDED_ATTRIBUTES[version]);
    Object.assign(addedContext, ADDED_CONTEXT[version]);
  }
  return {
    ...stored,
    schemaVersion: POLICY_REQUEST_VERSION,
    context: { ...addedContext, ...stored.context } as PolicyRequest["context"],
    entities: stored.entities.map((entity) =>
      "type" in entity.uid && entity.uid.type === "Proposal"
        ? { ...entity, attrs: { ...added, ...(entity.attrs as Record<string, unknown>) } as EntityJson["attrs"] }
        : entity,
    ),
  };
}

/** Name of the release schema inside the Cedar module; it has its own version. */
export const RELEASE_SCHEMA_NAME = "airlock-release-v1";

/**
 * What release policies (`action == Action::"release"`) are written against: the finished run's
 * result, as the post-execution gate saw it. Decided by the executor before the result is handed
 * over (lib/runs/release-decision.ts).
 */
export const RELEASE_SCHEMA = `// Airlock release schema v1. Every attribute is always present.
entity User;

entity Agent = {
  owner: User,
};

entity Result = {
  // what the gate flagged: "upstream_instruction_like" (a tool returned text that reads like
  // instructions to the model), "unreviewed_personal_data" (a script no person reviewed read
  // personal data from a tool), "instruction_like_text" (the script's own logs or errors),
  // "secret_redacted", "content_normalized", "rows_unaccounted", "tool_errors", "partial", …
  flags: Set<String>,
  // size of the result as JSON, in bytes
  bytes: Long,
  // the run's data classes (its tools' and its inputs'): public, internal, confidential, pii, financial, phi
  dataClasses: Set<String>,
};

action release appliesTo {
  principal: Agent,
  resource: Result,
  context: {},
};
`;

export type ReleaseRequestInput = { agent: { id: string; ownerId: string }; flags: readonly string[]; bytes: number; dataClasses: readonly string[] };

/** The request release policies are evaluated on (plain JSON, stored with the decision). */
export function buildReleaseRequest(input: ReleaseRequestInput): PolicyRequest {
  const principal = { type: "Agent", id: input.agent.id };
  const owner = { type: "User", id: input.agent.ownerId };
  const resource = { type: "Result", id: "finished" };
  return {
    schemaVersion: 1,
    principal,
    action: { type: "Action", id: "release" },
    resource,
    context: {},
    entities: [
      { uid: owner, attrs: {}, parents: [] },
      { uid: principal, attrs: { owner: { __entity: owner } }, parents: [] },
      { uid: resource, attrs: { flags: sortedUnique(input.flags), bytes: input.bytes, dataClasses: sortedUnique(input.dataClasses) }, parents: [] },
    ],
  };
}
