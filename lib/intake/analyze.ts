/**
 * Static analysis of an agent's script.
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
 * - Pure apart from reading TypeScript's lib .d.ts once per process (see typecheck.ts), and so
 *   cached by the digest of its whole input (the same script against the same registry is
 *   analysed once per process).
 * - What a reviewer cannot see is a finding: every hidden character (the ones the console marks,
 *   lib/untrusted/invisible.ts) is an `invisible_character` and every look-alike identifier a
 *   `confusable_identifier`, at the line and column the console's code view shows them on.
 *
 * Refuses: imports outside `allowedPackages` (an entry allows a package and its subpaths, or one
 * exact builtin path; `node:` is ignored, so `fs` allows `node:fs`), relative or URL imports,
 * and code-loading builtins (vm, v8, module, repl, worker_threads) even when allowlisted. The
 * caller passes the complete allowlist: the admin's packages plus the builtins the sandbox
 * permits (lib/sandbox/script.ts ALLOWED_BUILTINS).
 */
import { sha256Hex } from "@/lib/digest";
import { editDistance } from "@/lib/edit-distance";
import { finding, type Finding, type ScriptFacts, type ToolCallSites } from "@/lib/contracts/analysis";
import { FINDING_RULES } from "@/lib/errors";
import { checkToolArguments } from "@/lib/intake/arguments";
import { confusableIdentifierFindings, hiddenCharacterFindings } from "@/lib/intake/hidden-code";
import { clockOrRandomFindings } from "@/lib/intake/nondeterminism";
import { parseScript, transpileScript, typeCheckScript } from "@/lib/intake/typecheck";
import { walkScript, type WalkResult } from "@/lib/intake/walk";
import type { DataClass } from "@/lib/contracts/data-classes";
import { bareSpecifier, packageName } from "@/lib/contracts/packages";
import { EFFECT_RANK, effectOf, isReadOnly, quarantineText, type Effect, type ToolFacts } from "@/lib/contracts/tools";
import { fingerprintScript, type ScriptFingerprint } from "@/lib/script-fingerprint";

export type AnalysisInput = {
  code: string;
  language: "typescript" | "javascript";
  tools: readonly ToolFacts[];
  /** The broker's generated `declare const tools: {…}`. */
  declarations: string;
  allowedPackages: readonly string[];
  /** Configured upstreams that could not be connected: a tool of one is unknown until it answers. */
  unavailableServers?: readonly string[];
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
  callSites: ToolCallSites;
  /** The script's structural fingerprint over its capability set (lib/script-fingerprint.ts), cached with the rest. */
  shape: ScriptFingerprint;
};

const MAX_TYPE_ERRORS = 20;
/** Builtins that compile code, change V8 flags, make `require` or spawn evaluating threads. */
const CODE_LOADING_MODULES = new Set(["vm", "v8", "module", "repl", "worker_threads"]);

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

const readOnlyTool = (tool: ToolFacts | undefined): boolean => isReadOnly(tool?.annotations);

/** "tools.ledger.issueRefnd is not a tool; did you mean tools.ledger.issueRefund?" (the nearest registered name, when one is near). */
function unknownToolMessage(capability: string, registry: ReadonlyMap<string, ToolFacts>): string {
  const near = [...registry.keys()]
    .map((name) => ({ name, d: editDistance(capability.toLowerCase(), name.toLowerCase()) }))
    .filter(({ name, d }) => d <= Math.max(2, Math.floor(name.length / 4)))
    .sort((a, b) => a.d - b.d || a.name.localeCompare(b.name))[0];
  const hint = near ? `; did you mean tools.${near.name}?` : "; search_tools lists the tools that exist";
  return `tools.${capability} is not a tool${hint}`;
}

function registryFindings(walk: WalkResult, registry: ReadonlyMap<string, ToolFacts>, unavailable: readonly string[]): Finding[] {
  const out: Finding[] = [];
  const reported = new Set<string>();
  for (const ref of walk.toolRefs) {
    if (reported.has(ref.capability)) continue;
    reported.add(ref.capability);
    const tool = registry.get(ref.capability);
    const server = ref.capability.slice(0, ref.capability.indexOf("."));
    if (tool === undefined && unavailable.includes(server)) {
      // Why it could not be connected (an upstream's own error text) is the operator's, in the log: not said here.
      const text = `tools.${ref.capability} cannot be checked: upstream '${server}' is unavailable (Airlock could not connect to it); submit again once it answers`;
      out.push(finding("tool_unavailable", text, ref.line, ref.column));
    } else if (tool === undefined) {
      out.push(finding("unknown_tool", unknownToolMessage(ref.capability, registry), ref.line, ref.column));
    } else if (tool.quarantined) {
      out.push(finding("quarantined_tool", `tools.${ref.capability} may not be called: ${quarantineText(tool.quarantineReason)}`, ref.line, ref.column));
    }
  }
  const inInfiniteLoop = (pos: number) => walk.loops.some((loop) => pos >= loop.start && pos < loop.end);
  for (const ref of walk.toolRefs) {
    if (ref.repeated && !readOnlyTool(registry.get(ref.capability)) && !inInfiniteLoop(ref.pos)) {
      out.push(
        finding(
          "unbounded_loop",
          `tools.${ref.capability} is called in a loop, a callback or a function, or taken as a value, so it may run many times; it may be called up to the run's maxToolCalls`,
          ref.line,
          ref.column,
        ),
      );
    }
  }
  for (const loop of walk.loops) {
    const mutating = new Set(
      walk.toolRefs.filter((ref) => ref.pos >= loop.start && ref.pos < loop.end && !readOnlyTool(registry.get(ref.capability))).map((ref) => ref.capability),
    );
    if (mutating.size > 0) {
      out.push(finding("unbounded_loop", `loop without an exit condition calls ${[...mutating].sort().join(", ")}`, loop.line, loop.column));
    }
  }
  return out;
}

function callSitesOf(walk: WalkResult, registry: ReadonlyMap<string, ToolFacts>): ToolCallSites {
  const sites: ToolCallSites = {};
  for (const ref of walk.toolRefs) {
    const entry = (sites[ref.capability] ??= { count: 0, repeated: false, readOnly: readOnlyTool(registry.get(ref.capability)) });
    entry.count++;
    entry.repeated ||= ref.repeated;
  }
  return sites;
}

function factsOf(capabilitySet: readonly string[], registry: ReadonlyMap<string, ToolFacts>, walk: WalkResult): ScriptFacts {
  let effect: Effect = "read_only";
  let openWorld = false;
  const dataClasses = new Set<DataClass>();
  const readOnlyDataClasses = new Set<DataClass>();
  for (const capability of capabilitySet) {
    const tool = registry.get(capability);
    const toolEffect = tool === undefined ? "destructive" : effectOf(tool.annotations);
    if (EFFECT_RANK[toolEffect] > EFFECT_RANK[effect]) effect = toolEffect;
    if (tool === undefined || tool.annotations.openWorldHint !== false) openWorld = true;
    if (tool !== undefined) dataClasses.add(tool.dataClass);
    if (tool !== undefined && readOnlyTool(tool)) readOnlyDataClasses.add(tool.dataClass);
  }
  return {
    effect,
    openWorld,
    dataClasses: [...dataClasses].sort(),
    toolCount: capabilitySet.length,
    readOnlyDataClasses: [...readOnlyDataClasses].sort(),
    checks: walk.checkKinds,
  };
}

const byPosition = (a: Finding, b: Finding) => a.line - b.line || a.column - b.column || a.code.localeCompare(b.code);

function analyze(input: AnalysisInput): Analysis {
  const registry = new Map(input.tools.map((tool) => [`${tool.server}.${tool.name}`, tool]));
  const submitted = parseScript(input.code, input.language);

  const { javascript, syntaxErrors } = transpileScript(submitted, input.language);
  const walk = walkScript(submitted);
  const capabilitySet = [...new Set(walk.toolRefs.map((ref) => ref.capability))].sort();
  const schemas = new Map(input.tools.flatMap((tool) => (tool.inputSchema ? [[`${tool.server}.${tool.name}`, tool.inputSchema] as const] : [])));
  const toolArguments = checkToolArguments(submitted, schemas);
  const inArguments = (offset: number) => toolArguments.argumentSpans.some(([start, end]) => offset >= start && offset < end);

  const findings: Finding[] = [
    ...syntaxErrors.map((d) => finding("syntax_error", d.message, d.line, d.column)),
    ...walk.findings,
    ...importFindings(walk, input.allowedPackages),
    ...registryFindings(walk, registry, input.unavailableServers ?? []),
    ...toolArguments.findings,
    ...hiddenCharacterFindings(submitted),
    ...confusableIdentifierFindings(submitted),
    ...clockOrRandomFindings(
      submitted,
      capabilitySet.some((capability) => !readOnlyTool(registry.get(capability))),
    ),
  ];
  if (input.language === "typescript" && syntaxErrors.length === 0) {
    // An unknown tool is reported once, as unknown_tool with a suggestion, not again as a type dump.
    const unknownSpans = walk.toolRefs.filter((ref) => !registry.has(ref.capability)).map((ref) => [ref.pos, ref.end] as const);
    const typeErrors = typeCheckScript(submitted, input.declarations).filter((d) => !unknownSpans.some(([start, end]) => d.offset >= start && d.offset < end));
    for (const d of typeErrors.slice(0, MAX_TYPE_ERRORS)) {
      // A name defined nowhere the script can reach fails the run for certain: no reviewer need judge it.
      const code = d.unreachable ? "undefined_name" : inArguments(d.offset) ? "argument_type_error" : "type_error";
      findings.push(finding(code, d.message, d.line, d.column));
    }
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
    facts: factsOf(capabilitySet, registry, walk),
    callSites: callSitesOf(walk, registry),
    shape: fingerprintScript(input.code, input.language, capabilitySet),
  };
}

/** How many analyses are kept (about 10 ms each to redo: the type check is most of it). */
export const ANALYSIS_CACHE_SIZE = 500;
const analyses = new Map<string, Analysis>();

/**
 * The analysis of `input`, from the cache when the very same input was analysed before. An
 * analysis is a function of its whole input and nothing else, so the key is the digest of all of
 * it: the code, its language, every tool fact (a tool quarantined, reclassified or re-annotated
 * since is another key), the declarations and the package allowlist. The cache lives as long as
 * the process, so the analyser's own code cannot change under it. Callers get their own copy.
 */
export function analyzeScript(input: AnalysisInput): Analysis {
  const key = sha256Hex(JSON.stringify([input.code, input.language, input.tools, input.declarations, input.allowedPackages, input.unavailableServers ?? []]));
  const cached = analyses.get(key);
  if (cached) {
    analyses.delete(key);
    analyses.set(key, cached);
    return structuredClone(cached);
  }
  const analysis = analyzeOrFail(input);
  analyses.set(key, structuredClone(analysis));
  if (analyses.size > ANALYSIS_CACHE_SIZE) analyses.delete(analyses.keys().next().value!);
  return analysis;
}

/** The registry's side of an analysis, as a runtime holds it (lib/runs/service.ts RunDeps.registry). */
export type AnalysisRegistry = {
  toolFacts(): readonly ToolFacts[];
  declarations(): string;
  allowedImports(): readonly string[];
  unavailableServers(): readonly string[];
};

/** analyzeScript against the registry as it is now: its tool facts, declarations and package allowlist. */
export function analyzeAgainst(registry: AnalysisRegistry, code: string, language: AnalysisInput["language"]): Analysis {
  return analyzeScript({
    code,
    language,
    tools: registry.toolFacts(),
    declarations: registry.declarations(),
    allowedPackages: registry.allowedImports(),
    unavailableServers: registry.unavailableServers(),
  });
}

function analyzeOrFail(input: AnalysisInput): Analysis {
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
      facts: { effect: "destructive", openWorld: true, dataClasses: [], toolCount: 0, readOnlyDataClasses: [], checks: [] },
      callSites: {},
      shape: fingerprintScript(input.code, input.language, []),
    };
  }
}
