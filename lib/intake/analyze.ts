/**
 * Static analysis of an agent's script (DESIGN.md step 2; issue 4, "Intake and analysis").
 *
 * `analyzeScript` turns submitted code into what policy decides on: the JavaScript that will
 * run, the capability set (every `server.tool` the script can reach), the imports, findings with
 * a line and column in the submitted code, and facts derived from the server-side tool registry.
 *
 * Guarantees:
 * - It never throws for any input string: an internal failure becomes a critical
 *   `analysis_error` finding, so a crash of the analyser fails closed at policy.
 * - Facts come only from `tools` (the registry), never from the script: `read_only` only if
 *   every referenced tool says `readOnlyHint: true`; `destructive` if any tool is unknown or is
 *   not read-only without `destructiveHint: false` (MCP's default for destructiveHint and
 *   openWorldHint is true, and an unclassified tool is treated as the most dangerous kind).
 * - Pure apart from reading TypeScript's lib .d.ts once per process (see typecheck.ts).
 *
 * Refuses: imports outside `allowedPackages` (an entry allows a package and its subpaths, or one
 * exact builtin path; `node:` is ignored, so `fs` allows `node:fs`), relative or URL imports,
 * and code-loading builtins (vm, v8, module, repl, worker_threads) even when allowlisted. The
 * caller passes the complete allowlist: the admin's packages plus the builtins the sandbox
 * permits (lib/sandbox/script.ts ALLOWED_BUILTINS).
 */
import { finding, FINDING_RULES, type Finding } from "@/lib/intake/findings";
import { parseScript, transpileScript, typeCheckScript } from "@/lib/intake/typecheck";
import { walkScript, type WalkResult } from "@/lib/intake/walk";

/** The same classes as the DataClass enum in prisma/schema.prisma. */
export const DATA_CLASSES = ["public", "internal", "confidential", "pii", "financial", "phi"] as const;
export type DataClass = (typeof DATA_CLASSES)[number];

/** MCP tool annotations as the upstream declared them (hints, not guarantees). */
export type ToolAnnotations = {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
};

/** What analysis needs to know about one tool in the server-side registry. */
export type ToolFacts = {
  server: string;
  name: string;
  annotations: ToolAnnotations;
  dataClass: DataClass;
  quarantined: boolean;
};

export type Effect = "read_only" | "write" | "destructive";

export type ScriptFacts = {
  effect: Effect;
  openWorld: boolean;
  /** Data classes of the referenced tools, sorted, unique. */
  dataClasses: DataClass[];
  toolCount: number;
};

export type AnalysisInput = {
  code: string;
  language: "typescript" | "javascript";
  tools: readonly ToolFacts[];
  /** The broker's generated `declare const tools: {…}`. */
  declarations: string;
  allowedPackages: readonly string[];
};

export type Analysis = {
  /** What the sandbox runs: the same script contract (async body, leading imports), types stripped. */
  javascript: string;
  /** Sorted unique `server.tool`. */
  capabilitySet: string[];
  /** Sorted unique import specifiers, allowed or not. */
  imports: string[];
  /** Sorted by line, then column. */
  findings: Finding[];
  facts: ScriptFacts;
};

const MAX_TYPE_ERRORS = 20;
/** Builtins that compile code, change V8 flags, make `require` or spawn evaluating threads. */
const CODE_LOADING_MODULES = new Set(["vm", "v8", "module", "repl", "worker_threads"]);

/**
 * `node:fs/promises` → `fs/promises`; `@scope/pkg/sub` → `@scope/pkg/sub`; paths and URLs
 * (`./x`, `/x`, `file:`, `data:`, `https:`) → undefined.
 */
function bareSpecifier(specifier: string): string | undefined {
  const bare = specifier.startsWith("node:") ? specifier.slice("node:".length) : specifier;
  if (bare === "" || bare.startsWith(".") || bare.startsWith("/") || bare.includes(":")) return undefined;
  return bare;
}

/** `@scope/pkg/sub` → `@scope/pkg`, `pkg/sub` → `pkg`. */
function packageName(bare: string): string {
  const parts = bare.split("/");
  return bare.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
}

function importFindings(walk: WalkResult, allowedPackages: readonly string[]): Finding[] {
  const allowed = new Set(allowedPackages.map((name) => bareSpecifier(name) ?? name));
  const out: Finding[] = [];
  for (const site of walk.imports) {
    const bare = bareSpecifier(site.specifier);
    if (site.specifier.startsWith("data:") || (bare !== undefined && CODE_LOADING_MODULES.has(packageName(bare)))) {
      out.push(finding("eval_like", `importing "${site.specifier}" loads or compiles code at run time`, site.line, site.column));
    }
    if (bare === undefined) {
      out.push(finding("disallowed_import", `"${site.specifier}" is a path or URL; only allowlisted packages can be imported`, site.line, site.column));
    } else if (!allowed.has(bare) && !allowed.has(packageName(bare))) {
      out.push(finding("disallowed_import", `"${site.specifier}" is not on the allowlist`, site.line, site.column));
    }
  }
  return out;
}

function isReadOnly(tool: ToolFacts | undefined): boolean {
  return tool?.annotations.readOnlyHint === true;
}

function effectOf(tool: ToolFacts | undefined): Effect {
  if (tool === undefined) return "destructive";
  if (isReadOnly(tool)) return "read_only";
  return tool.annotations.destructiveHint === false ? "write" : "destructive";
}

const EFFECT_RANK = { read_only: 0, write: 1, destructive: 2 } as const satisfies Record<Effect, number>;

function registryFindings(walk: WalkResult, registry: ReadonlyMap<string, ToolFacts>): Finding[] {
  const out: Finding[] = [];
  const reported = new Set<string>();
  for (const ref of walk.toolRefs) {
    if (reported.has(ref.capability)) continue;
    reported.add(ref.capability);
    const tool = registry.get(ref.capability);
    if (tool === undefined) {
      out.push(finding("unknown_tool", `tools.${ref.capability} is not a registered tool`, ref.line, ref.column));
    } else if (tool.quarantined) {
      out.push(finding("quarantined_tool", `tools.${ref.capability} is quarantined until an admin accepts its changed definition`, ref.line, ref.column));
    }
  }
  for (const loop of walk.loops) {
    const mutating = new Set(
      walk.toolRefs
        .filter((ref) => ref.pos >= loop.start && ref.pos < loop.end && !isReadOnly(registry.get(ref.capability)))
        .map((ref) => ref.capability),
    );
    if (mutating.size > 0) {
      out.push(finding("unbounded_loop", `loop without an exit condition calls ${[...mutating].sort().join(", ")}`, loop.line, loop.column));
    }
  }
  return out;
}

function factsOf(capabilitySet: readonly string[], registry: ReadonlyMap<string, ToolFacts>): ScriptFacts {
  let effect: Effect = "read_only";
  let openWorld = false;
  const dataClasses = new Set<DataClass>();
  for (const capability of capabilitySet) {
    const tool = registry.get(capability);
    const toolEffect = effectOf(tool);
    if (EFFECT_RANK[toolEffect] > EFFECT_RANK[effect]) effect = toolEffect;
    if (tool === undefined || tool.annotations.openWorldHint !== false) openWorld = true;
    if (tool !== undefined) dataClasses.add(tool.dataClass);
  }
  return { effect, openWorld, dataClasses: [...dataClasses].sort(), toolCount: capabilitySet.length };
}

const byPosition = (a: Finding, b: Finding) => a.line - b.line || a.column - b.column || a.code.localeCompare(b.code);

function analyze(input: AnalysisInput): Analysis {
  const registry = new Map(input.tools.map((tool) => [`${tool.server}.${tool.name}`, tool]));
  const submitted = parseScript(input.code, input.language);

  const { javascript, syntaxErrors } = transpileScript(submitted, input.language);
  const walk = walkScript(submitted);
  const capabilitySet = [...new Set(walk.toolRefs.map((ref) => ref.capability))].sort();

  const findings: Finding[] = [
    ...syntaxErrors.map((d) => finding("syntax_error", d.message, d.line, d.column)),
    ...walk.findings,
    ...importFindings(walk, input.allowedPackages),
    ...registryFindings(walk, registry),
  ];
  if (input.language === "typescript" && syntaxErrors.length === 0) {
    const typeErrors = typeCheckScript(submitted, input.declarations);
    for (const d of typeErrors.slice(0, MAX_TYPE_ERRORS)) findings.push(finding("type_error", d.message, d.line, d.column));
    if (typeErrors.length > MAX_TYPE_ERRORS) {
      const last = typeErrors[MAX_TYPE_ERRORS]!;
      findings.push(finding("type_error", `${typeErrors.length - MAX_TYPE_ERRORS} more type errors not shown`, last.line, last.column));
    }
  }

  return {
    javascript,
    capabilitySet,
    imports: [...new Set(walk.imports.map((site) => site.specifier))].sort(),
    findings: findings.sort(byPosition),
    facts: factsOf(capabilitySet, registry),
  };
}

export function analyzeScript(input: AnalysisInput): Analysis {
  try {
    return analyze(input);
  } catch (error) {
    // Fail closed: a script that crashes the analyser is treated as unknown and dangerous.
    const message = error instanceof Error ? error.message : String(error);
    return {
      javascript: "",
      capabilitySet: [],
      imports: [],
      findings: [finding("analysis_error", `${FINDING_RULES.analysis_error.summary}: ${message}`, 1, 1)],
      facts: { effect: "destructive", openWorld: true, dataClasses: [], toolCount: 0 },
    };
  }
}
