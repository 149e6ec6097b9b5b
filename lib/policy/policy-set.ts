/**
 * Parsing, validation and preparation of Airlock policy sets.
 *
 * A policy set is Cedar text in which every policy carries Airlock's annotations:
 *   @id("…")        required, unique: the policy's name in decisions and audit
 *   @reason("…")    required: the sentence shown to agents and reviewers when it decides
 *   @approvals("N") permits only, 1–10: matching means "escalate to N approvals"
 *   @role("…")      only with @approvals: who may approve ("reviewer", the default and today the only
 *                   role holding runs:review — admins configure Airlock but do not approve runs)
 *   @maxWritesPerTool("N")  permits only, 1 to the run's maxToolCalls: when this permit decides, each
 *                   tool that is not read-only may be called up to N times (not only once per call site)
 * How these become allow / escalate / deny is decide.ts's business.
 *
 * Two actions, two sets in one text. A policy whose scope names `action == Action::"release"` (or
 * only release in `action in [...]`) decides whether a finished run's result reaches its agent, on
 * a `Result` (RELEASE_SCHEMA); every other policy, unscoped ones included, decides runs on a
 * `Proposal` (CEDAR_SCHEMA), as before release policies existed. Each set is validated against
 * its own schema, so adding release to Airlock broke no published text. A policy scoped to both
 * actions is refused: the two resources share no attributes. @maxWritesPerTool is for runs only.
 *
 * Guarantees: `validatePolicyText` never throws and reports every problem with a 1-based line
 * and column in the text as written (Cedar's parse errors, schema validation in strict mode,
 * annotation rules, and the shape limits that keep the Cedar engine working, ./text-limits.ts);
 * `preparePolicySet` accepts exactly the texts that validate and throws
 * `PolicyValidationError` otherwise. Templates are refused: Airlock links no slots.
 */
import { readFileSync } from "node:fs";
import * as cedar from "@cedar-policy/cedar-wasm/nodejs";
import { sha256Hex } from "@/lib/digest";
import { AppError } from "@/lib/errors";
import { CEDAR_SCHEMA, RELEASE_SCHEMA, RELEASE_SCHEMA_NAME, SCHEMA_NAME } from "@/lib/policy/request";
import { RUN_LIMIT_DEFAULTS } from "@/lib/sandbox/types";
import { conditionDepthProblem, textShapeProblem } from "./text-limits";

export const REVIEWER_ROLES = ["reviewer"] as const;
export type ReviewerRole = (typeof REVIEWER_ROLES)[number];
const MAX_APPROVALS = 10;
const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

export type PolicyProblem = { message: string; line: number; column: number; policyId?: string };

export type PolicyAction = "run" | "release";

export type PolicyInfo = {
  id: string;
  /** What it decides: a run (on its Proposal) or the release of a finished run's result. */
  action: PolicyAction;
  effect: "permit" | "forbid";
  reason: string;
  /** 0 unless the policy escalates. */
  approvals: number;
  role?: ReviewerRole;
  /** @maxWritesPerTool: raises the per-tool call cap of tools that are not read-only. */
  maxWritesPerTool?: number;
  /** The policy's text as written, annotations included. */
  source: string;
};

/** The policies of one action, loaded into the Cedar module under `id`. */
export type PreparedActionSet = {
  readonly id: string;
  /** In text order. */
  readonly policies: ReadonlyMap<string, PolicyInfo>;
};

/**
 * A validated policy text: its run policies (`id`, `policies`) and its release policies
 * (`release`, null when the text has none). Create with preparePolicySet.
 */
export type PreparedPolicySet = PreparedActionSet & { readonly release: PreparedActionSet | null };

export type PolicyValidation = { ok: boolean; errors: PolicyProblem[]; warnings: PolicyProblem[] };

export class PolicyValidationError extends AppError {
  readonly errors: PolicyProblem[];

  constructor(errors: PolicyProblem[]) {
    const first = errors[0];
    const where = first === undefined ? "" : ` (line ${first.line}, column ${first.column}: ${first.message})`;
    super("bad_request", `The policy set is invalid: ${errors.length} problem(s)${where}`, { details: { errors } });
    this.name = "PolicyValidationError";
    this.errors = errors;
  }
}

/** Blanks `//` comments (outside strings) so a policy's text can be found where it really is. */
function maskComments(text: string): string {
  let out = "";
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (inString) {
      out += ch;
      if (ch === "\\") {
        out += text[i + 1] ?? "";
        i++;
      } else if (ch === '"') {
        inString = false;
      }
    } else if (ch === '"') {
      inString = true;
      out += ch;
    } else if (ch === "/" && text[i + 1] === "/") {
      while (i < text.length && text[i] !== "\n") {
        out += " ";
        i++;
      }
      if (i < text.length) out += "\n";
    } else {
      out += ch;
    }
  }
  return out;
}

function lineColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, Math.max(0, Math.min(offset, text.length)));
  const lastBreak = before.lastIndexOf("\n");
  return { line: before.split("\n").length, column: before.length - lastBreak };
}

function problemsOf(errors: cedar.DetailedError[], text: string, base = 0, policyId?: string): PolicyProblem[] {
  return errors.map((error) => {
    const { line, column } = lineColumn(text, base + (error.sourceLocations?.[0]?.start ?? 0));
    const message = error.help ? `${error.message} (${error.help})` : error.message;
    return policyId === undefined ? { message, line, column } : { message, line, column, policyId };
  });
}

type Located = { text: string; offset: number };

/** The action a policy's scope names: run unless it names release alone; null when both. */
function actionOf(scope: cedar.ActionConstraint): PolicyAction | null {
  const idOf = (uid: cedar.EntityUidJson) => ("__entity" in uid ? uid.__entity.id : uid.id);
  const named = "entity" in scope ? [idOf(scope.entity)] : "entities" in scope ? scope.entities.map(idOf) : [];
  const release = named.filter((id) => id === "release").length;
  if (release === 0) return "run";
  return release === named.length ? "release" : null;
}

/** Cedar returns policies sorted by generated id ("policy10" < "policy2"); restore text order with offsets. */
function locate(text: string, parts: string[]): Located[] {
  const masked = maskComments(text);
  const claimed = new Set<number>();
  const located = parts.map((part) => {
    const needle = maskComments(part);
    let offset = masked.indexOf(needle);
    while (offset !== -1 && claimed.has(offset)) offset = masked.indexOf(needle, offset + 1);
    claimed.add(offset);
    return { text: part, offset: Math.max(offset, 0) };
  });
  return located.sort((a, b) => a.offset - b.offset);
}

type Parsed = { policies: PolicyInfo[]; errors: PolicyProblem[]; warnings: PolicyProblem[] };

function parseAndValidate(text: string): Parsed {
  // Before Cedar reads it: some shapes break the engine every decision shares (./text-limits.ts).
  const shape = textShapeProblem(text);
  if (shape) return { policies: [], errors: [{ message: shape.message, ...lineColumn(text, shape.offset) }], warnings: [] };
  const parts = cedar.policySetTextToParts(text);
  if (parts.type === "failure") return { policies: [], errors: problemsOf(parts.errors, text), warnings: [] };
  if (parts.policies.length === 0 && parts.policy_templates.length === 0) {
    const message = "the text holds no policy: published, it would deny every run (write at least one permit or forbid)";
    return { policies: [], errors: [{ message, line: 1, column: 1 }], warnings: [] };
  }

  const errors: PolicyProblem[] = [];
  if (parts.policy_templates.length > 0) {
    const [first] = locate(text, parts.policy_templates);
    errors.push({ message: "templates (policies with ?principal or ?resource slots) are not supported", ...lineColumn(text, first?.offset ?? 0) });
  }

  const policies: PolicyInfo[] = [];
  const offsets = new Map<string, number>();
  for (const { text: source, offset } of locate(text, parts.policies)) {
    const at = lineColumn(text, offset);
    const json = cedar.policyToJson(source);
    if (json.type === "failure") {
      errors.push(...problemsOf(json.errors, text, offset));
      continue;
    }
    const annotations = json.json.annotations ?? {};
    const id = annotations.id;
    const problem = (message: string) => errors.push({ message, ...at, ...(id ? { policyId: id } : {}) });
    if (id === undefined || !ID_PATTERN.test(id)) {
      problem('every policy needs @id("…") made of letters, digits, ".", "_", ":" or "-"');
      continue;
    }
    if (offsets.has(id)) {
      problem(`@id("${id}") is used by more than one policy`);
      continue;
    }
    offsets.set(id, offset);
    const deep = conditionDepthProblem(json.json);
    if (deep) {
      problem(`policy "${id}": ${deep}`);
      continue;
    }
    const reason = annotations.reason?.trim() ?? "";
    if (reason === "") problem(`policy "${id}" needs @reason("…"): it is what agents and reviewers are shown`);

    let approvals = 0;
    if (annotations.approvals !== undefined) {
      approvals = /^\d+$/.test(annotations.approvals) ? Number(annotations.approvals) : NaN;
      if (json.json.effect !== "permit") problem(`policy "${id}": @approvals only makes sense on a permit`);
      if (!(approvals >= 1 && approvals <= MAX_APPROVALS)) {
        problem(`policy "${id}": @approvals must be a whole number from 1 to ${MAX_APPROVALS}`);
      }
    }
    let role: ReviewerRole | undefined;
    if (annotations.role !== undefined) {
      role = REVIEWER_ROLES.find((r) => r === annotations.role);
      if (annotations.approvals === undefined) problem(`policy "${id}": @role needs @approvals`);
      if (role === undefined) problem(`policy "${id}": @role must be one of ${REVIEWER_ROLES.join(", ")}`);
    }
    const action = actionOf(json.json.action);
    if (action === null) {
      problem(`policy "${id}" applies to both run and release; write one policy for each (their resources share no attributes)`);
      continue;
    }
    let maxWritesPerTool: number | undefined;
    if (annotations.maxWritesPerTool !== undefined && action === "release") problem(`policy "${id}": @maxWritesPerTool is for run policies`);
    if (annotations.maxWritesPerTool !== undefined) {
      maxWritesPerTool = /^\d+$/.test(annotations.maxWritesPerTool) ? Number(annotations.maxWritesPerTool) : NaN;
      if (json.json.effect !== "permit") problem(`policy "${id}": @maxWritesPerTool only makes sense on a permit`);
      if (!(maxWritesPerTool >= 1 && maxWritesPerTool <= RUN_LIMIT_DEFAULTS.maxToolCalls)) {
        problem(`policy "${id}": @maxWritesPerTool must be a whole number from 1 to ${RUN_LIMIT_DEFAULTS.maxToolCalls}`);
      }
    }
    policies.push({
      id,
      action,
      effect: json.json.effect,
      reason,
      approvals,
      ...(approvals > 0 ? { role: role ?? "reviewer" } : {}),
      ...(maxWritesPerTool !== undefined ? { maxWritesPerTool } : {}),
      source,
    });
  }

  const warnings: PolicyProblem[] = [];
  for (const [action, schema] of [
    ["run", CEDAR_SCHEMA],
    ["release", RELEASE_SCHEMA],
  ] as const) {
    const validation = cedar.validate({
      schema,
      policies: { staticPolicies: Object.fromEntries(policies.filter((p) => p.action === action).map((p) => [p.id, p.source])) },
      validationSettings: { mode: "strict" },
    });
    if (validation.type === "failure") {
      errors.push(...problemsOf(validation.errors, text));
      continue;
    }
    for (const { policyId, error } of validation.validationErrors) {
      errors.push(...problemsOf([error], text, offsets.get(policyId) ?? 0, policyId));
    }
    for (const { policyId, error } of validation.validationWarnings) {
      warnings.push(...problemsOf([error], text, offsets.get(policyId) ?? 0, policyId));
    }
  }
  return { policies, errors: errors.sort((a, b) => a.line - b.line || a.column - b.column), warnings };
}

/** Parse + schema validation of a draft. Never throws. */
export function validatePolicyText(text: string): PolicyValidation {
  const { errors, warnings } = parseAndValidate(text);
  return { ok: errors.length === 0, errors, warnings };
}

let schemasPrepared = false;

function prepareSchemas(): void {
  if (schemasPrepared) return;
  for (const [name, schema] of [
    [SCHEMA_NAME, CEDAR_SCHEMA],
    [RELEASE_SCHEMA_NAME, RELEASE_SCHEMA],
  ] as const) {
    const parsed = cedar.preparseSchema(name, schema);
    if (parsed.type === "failure") throw new Error(`Airlock's Cedar schema ${name} does not parse: ${parsed.errors[0]?.message}`);
  }
  schemasPrepared = true;
}

// Content-addressed: preparing the same text twice reuses the same slot in the Cedar module.
// Slots are never freed; a process prepares the published versions and the drafts it replays.
function prepareActionSet(id: string, policies: readonly PolicyInfo[], text: string): PreparedActionSet {
  const loaded = cedar.preparsePolicySet(id, { staticPolicies: Object.fromEntries(policies.map((p) => [p.id, p.source])) });
  if (loaded.type === "failure") throw new PolicyValidationError(problemsOf(loaded.errors, text));
  return { id, policies: new Map(policies.map((p) => [p.id, p])) };
}

/** Validates `text` and loads it into Cedar for fast repeated decisions. Throws PolicyValidationError. */
export function preparePolicySet(text: string): PreparedPolicySet {
  const { policies, errors } = parseAndValidate(text);
  if (errors.length > 0) throw new PolicyValidationError(errors);
  prepareSchemas();
  const id = `airlock-${sha256Hex(text)}`;
  const release = policies.filter((p) => p.action === "release");
  return {
    ...prepareActionSet(
      id,
      policies.filter((p) => p.action === "run"),
      text,
    ),
    release: release.length > 0 ? prepareActionSet(`${id}-release`, release, text) : null,
  };
}

let defaultText: string | undefined;

/**
 * The shipped default policy set (default-policies.cedar), which the seed publishes as the first
 * version. Reads the file beside this module, so it is for the seed, the CLI and tests; the app
 * decides with the published version from the database.
 */
export function defaultPolicyText(): string {
  defaultText ??= readFileSync(new URL("./default-policies.cedar", import.meta.url), "utf8");
  return defaultText;
}
