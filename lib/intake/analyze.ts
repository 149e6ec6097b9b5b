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
 * - Pure apart from reading TypeScript's lib .d.ts once per process (see typecheck.ts).
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
import ts from "typescript";
import { finding, type Finding, type ScriptFacts, type ToolCallSites } from "@/lib/contracts/analysis";
import { FINDING_RULES } from "@/lib/errors";
import { checkToolArguments } from "@/lib/intake/arguments";
import { parseScript, transpileScript, typeCheckScript } from "@/lib/intake/typecheck";
import { walkScript, type WalkResult } from "@/lib/intake/walk";
import type { DataClass } from "@/lib/contracts/data-classes";
import { bareSpecifier, packageName } from "@/lib/contracts/packages";
import { EFFECT_RANK, effectOf, isReadOnly, type Effect, type ToolFacts } from "@/lib/contracts/tools";
import { describeCodePoint, findHidden } from "@/lib/untrusted/invisible";

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
  callSites: ToolCallSites;
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

// --- what the reviewer cannot see: hidden characters and look-alike identifiers -------------------

const MAX_HIDDEN_FINDINGS = 20;
const MAX_CONFUSABLE_FINDINGS = 20;
const BIDI_CONTROLS = new Set([0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069]);

function hiddenMessage(codePoint: number): string {
  const what = describeCodePoint(codePoint);
  if (codePoint === 0x2028 || codePoint === 0x2029 || codePoint === 0x0d) {
    return `${what}: JavaScript ends the line here (and a // comment with it), though most viewers show no line break`;
  }
  if (codePoint === 0x1b) return `${what}: a terminal escape can hide or rewrite the text around it`;
  if (BIDI_CONTROLS.has(codePoint)) return `${what}: a direction control can make code display in another order than it runs`;
  return `${what}: an invisible character`;
}

/**
 * One `invisible_character` finding per hidden character (lib/untrusted/invisible.ts: the characters
 * the console marks), at its line and column in TypeScript's line map — which, like JavaScript and
 * the console's code view, ends lines at \n, \r\n, \r, U+2028 and U+2029. Columns count UTF-16
 * units, as for every other finding.
 */
function hiddenCharacterFindings(sf: ts.SourceFile): Finding[] {
  const hidden = findHidden(sf.text);
  const at = (index: number) => {
    const { line, character } = sf.getLineAndCharacterOfPosition(index);
    return [line + 1, character + 1] as const;
  };
  const out = hidden.slice(0, MAX_HIDDEN_FINDINGS).map(({ codePoint, index }) => finding("invisible_character", hiddenMessage(codePoint), ...at(index)));
  if (hidden.length > MAX_HIDDEN_FINDINGS) {
    const next = hidden[MAX_HIDDEN_FINDINGS]!;
    out.push(finding("invisible_character", `${hidden.length - MAX_HIDDEN_FINDINGS} more invisible characters not listed`, ...at(next.index)));
  }
  return out;
}

/** Scripts told apart in identifiers; letters of any other script count as one "other" script. */
const SCRIPTS = [
  "Latin",
  "Greek",
  "Cyrillic",
  "Armenian",
  "Hebrew",
  "Arabic",
  "Syriac",
  "Thaana",
  "Nko",
  "Devanagari",
  "Bengali",
  "Gurmukhi",
  "Gujarati",
  "Oriya",
  "Tamil",
  "Telugu",
  "Kannada",
  "Malayalam",
  "Sinhala",
  "Thai",
  "Lao",
  "Tibetan",
  "Myanmar",
  "Georgian",
  "Hangul",
  "Ethiopic",
  "Cherokee",
  "Canadian_Aboriginal",
  "Ogham",
  "Runic",
  "Khmer",
  "Mongolian",
  "Han",
  "Hiragana",
  "Katakana",
  "Bopomofo",
  "Coptic",
  "Tifinagh",
  "Vai",
  "Lisu",
  "Osage",
  "Adlam",
].map((name) => ({ name: name.replace("_", " "), pattern: new RegExp(`^\\p{Script=${name}}$`, "u") }));
const SCRIPT_NEUTRAL = /^[\p{Script=Common}\p{Script=Inherited}]$/u;
/** Script mixes that are ordinary writing (Unicode TR39 "highly restrictive"): Latin with CJK sets. */
const ORDINARY_MIXES = [new Set(["Latin", "Han", "Hiragana", "Katakana"]), new Set(["Latin", "Han", "Bopomofo"]), new Set(["Latin", "Han", "Hangul"])];

/** Cyrillic and Greek letters that look like Latin ones: code point → [Latin look-alike, name]. */
const LATIN_LOOKALIKES = new Map<number, [string, string]>([
  [0x0430, ["a", "CYRILLIC SMALL LETTER A"]],
  [0x0435, ["e", "CYRILLIC SMALL LETTER IE"]],
  [0x043e, ["o", "CYRILLIC SMALL LETTER O"]],
  [0x0440, ["p", "CYRILLIC SMALL LETTER ER"]],
  [0x0441, ["c", "CYRILLIC SMALL LETTER ES"]],
  [0x0443, ["y", "CYRILLIC SMALL LETTER U"]],
  [0x0445, ["x", "CYRILLIC SMALL LETTER HA"]],
  [0x0455, ["s", "CYRILLIC SMALL LETTER DZE"]],
  [0x0456, ["i", "CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I"]],
  [0x0458, ["j", "CYRILLIC SMALL LETTER JE"]],
  [0x04bb, ["h", "CYRILLIC SMALL LETTER SHHA"]],
  [0x0501, ["d", "CYRILLIC SMALL LETTER KOMI DE"]],
  [0x051b, ["q", "CYRILLIC SMALL LETTER QA"]],
  [0x051d, ["w", "CYRILLIC SMALL LETTER WE"]],
  [0x04cf, ["l", "CYRILLIC SMALL LETTER PALOCHKA"]],
  [0x0405, ["S", "CYRILLIC CAPITAL LETTER DZE"]],
  [0x0406, ["I", "CYRILLIC CAPITAL LETTER BYELORUSSIAN-UKRAINIAN I"]],
  [0x0408, ["J", "CYRILLIC CAPITAL LETTER JE"]],
  [0x0410, ["A", "CYRILLIC CAPITAL LETTER A"]],
  [0x0412, ["B", "CYRILLIC CAPITAL LETTER VE"]],
  [0x0415, ["E", "CYRILLIC CAPITAL LETTER IE"]],
  [0x041a, ["K", "CYRILLIC CAPITAL LETTER KA"]],
  [0x041c, ["M", "CYRILLIC CAPITAL LETTER EM"]],
  [0x041d, ["H", "CYRILLIC CAPITAL LETTER EN"]],
  [0x041e, ["O", "CYRILLIC CAPITAL LETTER O"]],
  [0x0420, ["P", "CYRILLIC CAPITAL LETTER ER"]],
  [0x0421, ["C", "CYRILLIC CAPITAL LETTER ES"]],
  [0x0422, ["T", "CYRILLIC CAPITAL LETTER TE"]],
  [0x0425, ["X", "CYRILLIC CAPITAL LETTER HA"]],
  [0x04ae, ["Y", "CYRILLIC CAPITAL LETTER STRAIGHT U"]],
  [0x04c0, ["I", "CYRILLIC LETTER PALOCHKA"]],
  [0x03bf, ["o", "GREEK SMALL LETTER OMICRON"]],
  [0x0391, ["A", "GREEK CAPITAL LETTER ALPHA"]],
  [0x0392, ["B", "GREEK CAPITAL LETTER BETA"]],
  [0x0395, ["E", "GREEK CAPITAL LETTER EPSILON"]],
  [0x0396, ["Z", "GREEK CAPITAL LETTER ZETA"]],
  [0x0397, ["H", "GREEK CAPITAL LETTER ETA"]],
  [0x0399, ["I", "GREEK CAPITAL LETTER IOTA"]],
  [0x039a, ["K", "GREEK CAPITAL LETTER KAPPA"]],
  [0x039c, ["M", "GREEK CAPITAL LETTER MU"]],
  [0x039d, ["N", "GREEK CAPITAL LETTER NU"]],
  [0x039f, ["O", "GREEK CAPITAL LETTER OMICRON"]],
  [0x03a1, ["P", "GREEK CAPITAL LETTER RHO"]],
  [0x03a4, ["T", "GREEK CAPITAL LETTER TAU"]],
  [0x03a5, ["Y", "GREEK CAPITAL LETTER UPSILON"]],
  [0x03a7, ["X", "GREEK CAPITAL LETTER CHI"]],
]);

function scriptOf(char: string): string | undefined {
  if (SCRIPT_NEUTRAL.test(char)) return undefined;
  return SCRIPTS.find((script) => script.pattern.test(char))?.name ?? "another script";
}

function describeLetter(char: string, script: string): string {
  const codePoint = char.codePointAt(0)!;
  const lookalike = LATIN_LOOKALIKES.get(codePoint);
  const label = `U+${codePoint.toString(16).toUpperCase().padStart(4, "0")}`;
  return lookalike ? `${label} ${lookalike[1]} (looks like Latin "${lookalike[0]}")` : `${label} (${script})`;
}

/**
 * Why an identifier can pass for another name, or undefined. Two honest rules: its letters come
 * from more than one script (digits, "_", "$" and combining marks belong to none), other than
 * Latin with Chinese/Japanese/Korean; or every letter is a Cyrillic/Greek look-alike of a Latin
 * one (it reads as a Latin name, e.g. Cyrillic "рау" for "pay").
 */
function confusableReason(name: string): string | undefined {
  const letters = [...name].flatMap((char) => {
    const script = scriptOf(char);
    return script === undefined ? [] : [{ char, script }];
  });
  if (letters.length === 0) return undefined;
  const scripts = [...new Set(letters.map((l) => l.script))];
  if (scripts.length > 1 && !ORDINARY_MIXES.some((mix) => scripts.every((s) => mix.has(s)))) {
    const main = scripts.includes("Latin") ? "Latin" : scripts[0]!;
    const odd = [...new Set(letters.filter((l) => l.script !== main).map((l) => l.char))].slice(0, 3);
    const others = scripts.filter((s) => s !== main);
    return `mixes ${main} and ${others.join(", ")} letters: ${odd.map((char) => describeLetter(char, letters.find((l) => l.char === char)!.script)).join(", ")}`;
  }
  if (scripts[0] !== "Latin" && letters.every((l) => LATIN_LOOKALIKES.has(l.char.codePointAt(0)!))) {
    const looksLike = [...name].map((char) => LATIN_LOOKALIKES.get(char.codePointAt(0)!)?.[0] ?? char).join("");
    return `is written in ${scripts[0]} letters that look like the Latin name "${looksLike}": ${describeLetter(letters[0]!.char, scripts[0]!)}`;
  }
  return undefined;
}

/** One `confusable_identifier` finding per distinct look-alike name, at its first occurrence. */
function confusableIdentifierFindings(sf: ts.SourceFile): Finding[] {
  const out: Finding[] = [];
  const seen = new Set<string>();
  const visit = (node: ts.Node): void => {
    if (out.length >= MAX_CONFUSABLE_FINDINGS) return;
    if ((ts.isIdentifier(node) || ts.isPrivateIdentifier(node)) && !seen.has(node.text)) {
      seen.add(node.text);
      const reason = confusableReason(node.text);
      if (reason !== undefined) {
        const { line, character } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
        out.push(finding("confusable_identifier", `identifier "${node.text}" ${reason}`, line + 1, character + 1));
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

const readOnlyTool = (tool: ToolFacts | undefined): boolean => isReadOnly(tool?.annotations);

/** Edit distance (insertions, deletions, substitutions), for suggesting the name a typo meant. */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length]!;
}

/** "tools.ledger.issueRefnd is not a tool; did you mean tools.ledger.issueRefund?" (the nearest registered name, when one is near). */
function unknownToolMessage(capability: string, registry: ReadonlyMap<string, ToolFacts>): string {
  const near = [...registry.keys()]
    .map((name) => ({ name, d: distance(capability.toLowerCase(), name.toLowerCase()) }))
    .filter(({ name, d }) => d <= Math.max(2, Math.floor(name.length / 4)))
    .sort((a, b) => a.d - b.d || a.name.localeCompare(b.name))[0];
  const hint = near ? `; did you mean tools.${near.name}?` : "; search_tools lists the tools that exist";
  return `tools.${capability} is not a tool${hint}`;
}

function registryFindings(walk: WalkResult, registry: ReadonlyMap<string, ToolFacts>): Finding[] {
  const out: Finding[] = [];
  const reported = new Set<string>();
  for (const ref of walk.toolRefs) {
    if (reported.has(ref.capability)) continue;
    reported.add(ref.capability);
    const tool = registry.get(ref.capability);
    if (tool === undefined) {
      out.push(finding("unknown_tool", unknownToolMessage(ref.capability, registry), ref.line, ref.column));
    } else if (tool.quarantined) {
      out.push(finding("quarantined_tool", `tools.${ref.capability} is quarantined until an admin accepts its changed definition`, ref.line, ref.column));
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

function factsOf(capabilitySet: readonly string[], registry: ReadonlyMap<string, ToolFacts>): ScriptFacts {
  let effect: Effect = "read_only";
  let openWorld = false;
  const dataClasses = new Set<DataClass>();
  for (const capability of capabilitySet) {
    const tool = registry.get(capability);
    const toolEffect = tool === undefined ? "destructive" : effectOf(tool.annotations);
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
  const schemas = new Map(input.tools.flatMap((tool) => (tool.inputSchema ? [[`${tool.server}.${tool.name}`, tool.inputSchema] as const] : [])));
  const toolArguments = checkToolArguments(submitted, schemas);
  const inArguments = (offset: number) => toolArguments.argumentSpans.some(([start, end]) => offset >= start && offset < end);

  const findings: Finding[] = [
    ...syntaxErrors.map((d) => finding("syntax_error", d.message, d.line, d.column)),
    ...walk.findings,
    ...importFindings(walk, input.allowedPackages),
    ...registryFindings(walk, registry),
    ...toolArguments.findings,
    ...hiddenCharacterFindings(submitted),
    ...confusableIdentifierFindings(submitted),
  ];
  if (input.language === "typescript" && syntaxErrors.length === 0) {
    // An unknown tool is reported once, as unknown_tool with a suggestion, not again as a type dump.
    const unknownSpans = walk.toolRefs.filter((ref) => !registry.has(ref.capability)).map((ref) => [ref.pos, ref.end] as const);
    const typeErrors = typeCheckScript(submitted, input.declarations).filter((d) => !unknownSpans.some(([start, end]) => d.offset >= start && d.offset < end));
    for (const d of typeErrors.slice(0, MAX_TYPE_ERRORS))
      findings.push(finding(inArguments(d.offset) ? "argument_type_error" : "type_error", d.message, d.line, d.column));
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
    callSites: callSitesOf(walk, registry),
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
      callSites: {},
    };
  }
}
