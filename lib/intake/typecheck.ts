/**
 * Type-checking and stripping of agent scripts with the TypeScript compiler API.
 *
 * A script is the body of an async function, optionally preceded by static imports. To check it,
 * the leading imports stay at module level and the rest is wrapped in `async function` in memory;
 * every diagnostic is mapped back to a line and column of the code as submitted.
 *
 * Guarantees: the script never touches the disk; the only files read are TypeScript's own lib
 * .d.ts, once per process, and they are kept as parsed SourceFiles in a module-level cache, so
 * a check costs one small program (tens of ms), not a re-parse of the standard library. The
 * declarations text and the runtime contract are cached by content the same way.
 *
 * What the checker knows: ES2024 built-ins, the broker's `declare const tools`, and the script
 * contract (lib/contracts/script-contract.ts: `inputs`, `console` and a few globals the sandbox
 * provides), each declared once; `contractDiagnostics` proves the three files check cleanly. Imports are not resolved, so every imported binding is
 * typed `any` (packages' own types are not loaded) and "cannot find module" is not a type error:
 * the allowlist is enforced by analysis as `disallowed_import` instead.
 */
import path from "node:path";
import ts from "typescript";
import { SCRIPT_CONTRACT_DECLARATIONS } from "@/lib/contracts/script-contract";
// Emit settings in one place, with the mapping from what runs back to what was written.
import { TRANSPILE_OPTIONS } from "@/lib/script-transpile";

const SCRIPT_FILE = "/airlock/script.ts";
const DECLARATIONS_FILE = "/airlock/tools.d.ts";
const CONTRACT_FILE = "/airlock/contract.d.ts";

const WRAPPER_HEAD = "async function __airlockScript__() {";
const WRAPPER_TAIL = "\n}\n";

/** Cannot find module / its types: reported as disallowed_import by the walk instead. */
const IGNORED_CODES = new Set([2307, 2792, 7016]);
const IMPLICIT_ANY = (code: number) => code >= 7000 && code < 7100;

const CHECK_OPTIONS: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2023,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  moduleDetection: ts.ModuleDetectionKind.Force,
  lib: ["lib.es2024.d.ts"],
  types: [],
  strict: true,
  // On so that `const rows = []` grows with what is pushed (off, it is never[] and every push is an
  // error); its own complaints (TS7xxx, implicit any) are dropped: agents write small helpers
  // without annotations, and that is not worth holding a run over.
  noImplicitAny: true,
  verbatimModuleSyntax: true,
  noResolve: true,
  noEmit: true,
  // TypeScript's own lib files are trusted; the contract and the tool declarations are checked
  // (contractDiagnostics), since they are generated from upstream schemas.
  skipDefaultLibCheck: true,
};

const LIB_DIR = path.dirname(ts.getDefaultLibFilePath(CHECK_OPTIONS));
const libCache = new Map<string, ts.SourceFile>();

/** Small content-keyed cache: declarations change only when an upstream's tools change. */
const CONTENT_CACHE_LIMIT = 16;
const contentCache = new Map<string, ts.SourceFile>();

function cachedByContent(fileName: string, text: string): ts.SourceFile {
  const key = `${fileName}\0${text}`;
  const hit = contentCache.get(key);
  if (hit !== undefined) return hit;
  const sf = ts.createSourceFile(fileName, text, CHECK_OPTIONS.target!, false);
  if (contentCache.size >= CONTENT_CACHE_LIMIT) {
    const oldest = contentCache.keys().next().value;
    if (oldest !== undefined) contentCache.delete(oldest);
  }
  contentCache.set(key, sf);
  return sf;
}

function libSourceFile(fileName: string): ts.SourceFile | undefined {
  const cached = libCache.get(fileName);
  if (cached !== undefined) return cached;
  if (path.dirname(fileName) !== LIB_DIR) return undefined;
  const text = ts.sys.readFile(fileName);
  if (text === undefined) return undefined;
  const sf = ts.createSourceFile(fileName, text, CHECK_OPTIONS.target!, false);
  libCache.set(fileName, sf);
  return sf;
}

/** `offset`: where in the submitted code (UTF-16 units), for telling which construct it is about. */
/** `unreachable`: a name defined nowhere the sandbox reaches, used as a value (the run would fail there). */
export type ScriptDiagnostic = { message: string; line: number; column: number; offset: number; unreachable?: true };

/**
 * A script is always a module (imports, top-level await); TypeScript only parses `await (x)`
 * as an await when the file is marked as one, which this option is the public hook for.
 */
function markAsModule(file: ts.SourceFile): void {
  (file as { externalModuleIndicator?: true }).externalModuleIndicator = true;
}

/** Parses submitted code (with parent links) the way it will be checked and run. */
export function parseScript(code: string, language: "typescript" | "javascript"): ts.SourceFile {
  return ts.createSourceFile(
    SCRIPT_FILE,
    code,
    { languageVersion: CHECK_OPTIONS.target!, setExternalModuleIndicator: markAsModule },
    true,
    language === "typescript" ? ts.ScriptKind.TS : ts.ScriptKind.JS,
  );
}

/** Where the leading imports end: the function wrapper starts there. */
function leadingImportsEnd(script: ts.SourceFile): number {
  let end = 0;
  for (const statement of script.statements) {
    if (!ts.isImportDeclaration(statement) && !ts.isImportEqualsDeclaration(statement)) break;
    end = statement.end;
  }
  return end;
}

/**
 * Type errors of a TypeScript script (`submitted`, as parsed by analysis) against
 * `declarations`, located in the submitted code.
 * Syntax errors are not reported here (transpile reports them without the wrapper).
 */
/** One program: the script contract, the tool declarations and the (wrapped) script. */
function checkProgram(wrapped: string, declarations: string): ts.Program {
  const files = new Map<string, ts.SourceFile>([
    [SCRIPT_FILE, ts.createSourceFile(SCRIPT_FILE, wrapped, CHECK_OPTIONS.target!, false, ts.ScriptKind.TS)],
    [DECLARATIONS_FILE, cachedByContent(DECLARATIONS_FILE, declarations)],
    [CONTRACT_FILE, cachedByContent(CONTRACT_FILE, SCRIPT_CONTRACT_DECLARATIONS)],
  ]);
  const host: ts.CompilerHost = {
    getSourceFile: (fileName) => files.get(fileName) ?? libSourceFile(fileName),
    getDefaultLibFileName: (options) => ts.getDefaultLibFilePath(options),
    getDefaultLibLocation: () => LIB_DIR,
    writeFile: () => {},
    getCurrentDirectory: () => "/airlock",
    getCanonicalFileName: (fileName) => fileName,
    useCaseSensitiveFileNames: () => true,
    getNewLine: () => "\n",
    fileExists: (fileName) => files.has(fileName) || libSourceFile(fileName) !== undefined,
    readFile: (fileName) => files.get(fileName)?.text ?? libSourceFile(fileName)?.text,
  };
  return ts.createProgram({ rootNames: [CONTRACT_FILE, DECLARATIONS_FILE, SCRIPT_FILE], options: CHECK_OPTIONS, host });
}

/**
 * Every diagnostic the check program reports outside the script itself (options, the contract,
 * the tool declarations). Must be empty: a conflict there (two declarations of `inputs`, a broken
 * generated type) would otherwise be silently dropped from every script's check.
 */
export function contractDiagnostics(declarations: string): string[] {
  const program = checkProgram(WRAPPER_HEAD + WRAPPER_TAIL, declarations);
  const all = [
    ...program.getOptionsDiagnostics(),
    ...program.getGlobalDiagnostics(),
    ...program.getSyntacticDiagnostics(),
    ...program.getSemanticDiagnostics(),
  ];
  return all
    .filter((d) => d.file?.fileName !== SCRIPT_FILE)
    .map((d) => `${d.file?.fileName ?? "program"}: TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`);
}

export function typeCheckScript(submitted: ts.SourceFile, declarations: string): ScriptDiagnostic[] {
  const code = submitted.text;
  const importsEnd = leadingImportsEnd(submitted);
  const wrapped = code.slice(0, importsEnd) + WRAPPER_HEAD + code.slice(importsEnd) + WRAPPER_TAIL;
  const program = checkProgram(wrapped, declarations);
  const script = program.getSourceFile(SCRIPT_FILE)!;

  const toOriginal = (offset: number): number => {
    if (offset < importsEnd) return offset;
    const shifted = offset - WRAPPER_HEAD.length;
    return Math.min(Math.max(shifted, importsEnd), code.length);
  };
  return program
    .getSemanticDiagnostics(script)
    .filter((d) => !IGNORED_CODES.has(d.code) && !IMPLICIT_ANY(d.code))
    .map((d) => {
      const offset = toOriginal(d.start ?? 0);
      const { line, character } = submitted.getLineAndCharacterOfPosition(offset);
      const text = ts.flattenDiagnosticMessageText(d.messageText, "\n");
      const missing = MISSING_NAME_CODES.has(d.code) ? /^Cannot find name '([^']+)'/.exec(text)?.[1] : undefined;
      return {
        message: shortened(`TS${d.code}: ${forScripts(text, missing)}${forgottenAwait(d)}`),
        line: line + 1,
        column: character + 1,
        offset,
        ...(missing !== undefined && unreachable(missing, submitted, offset) ? { unreachable: true as const } : {}),
      };
    });
}

/** "Cannot find name 'x'." and "…. Did you mean 'y'?" */
const MISSING_NAME_CODES = new Set([2304, 2552]);

/** Names a script reaches for that the sandbox does not have: it has no network of its own. */
const NETWORK_NAMES = new Set(["fetch", "XMLHttpRequest", "WebSocket", "EventSource"]);

/**
 * Whether a name TypeScript cannot find is out of the sandbox's reach too: not a global of this
 * Node (the sandbox's is the same), or a network one it has no permission for, and used as a value
 * (a name in a type is stripped before the script runs). The run would fail where the script uses it.
 */
function unreachable(name: string, submitted: ts.SourceFile, offset: number): boolean {
  return !inTypePosition(submitted, offset) && (NETWORK_NAMES.has(name) || !(name in globalThis));
}

/** Whether the code at `offset` is part of a type (stripped before the script runs: a name missing there fails nothing). */
function inTypePosition(submitted: ts.SourceFile, offset: number): boolean {
  let node: ts.Node | undefined = deepestAt(submitted, offset);
  for (; node && !ts.isSourceFile(node); node = node.parent) {
    if (ts.isTypeNode(node) && !ts.isExpressionWithTypeArguments(node)) return true;
    if (ts.isTypeAliasDeclaration(node) || ts.isInterfaceDeclaration(node)) return true;
  }
  return false;
}

function deepestAt(node: ts.Node, offset: number): ts.Node {
  const child = node.forEachChild((c) => (c.getStart() <= offset && offset < c.end ? c : undefined));
  return child ? deepestAt(child, offset) : node;
}

/** TypeScript's "Did you forget to use 'await'?", which it gives as related information, not in the message. */
function forgottenAwait(d: ts.Diagnostic): string {
  const related = (d.relatedInformation ?? []).map((info) => ts.flattenDiagnosticMessageText(info.messageText, " "));
  return related.some((text) => text.includes("Did you forget to use 'await'?")) ? " Did you forget to use 'await'?" : "";
}

/**
 * TypeScript's advice is for a project (`npm i --save-dev @types/node`, change the 'lib' compiler
 * option), which an agent cannot follow: dropped. A network name says why it is missing instead.
 */
function forScripts(message: string, missing: string | undefined): string {
  const advice = / Do you need to (?:install type definitions|change your target library)[\s\S]*$/;
  const plain = message.replace(advice, "");
  return missing !== undefined && NETWORK_NAMES.has(missing)
    ? `${plain} The sandbox has no network: upstream tools are called as \`await tools.<server>.<tool>(args)\`.`
    : plain;
}

/**
 * A diagnostic as an agent and a reviewer read it: its first lines; past MAX_DIAGNOSTIC_CHARS,
 * each quoted type of 80 characters or more is cut to its start (at a `|`, `;` or `,`), so the
 * names that say what is wrong (`Property 'idempotencyKey' is missing`) are not cut off behind a
 * type dump. A message that fits is left whole (an enum's allowed values included).
 */
const MAX_DIAGNOSTIC_CHARS = 300;
function shortened(message: string): string {
  const lines = message.split("\n").slice(0, 3).join("\n");
  if (lines.length <= MAX_DIAGNOSTIC_CHARS) return lines;
  const compact = lines.replace(/'([^'\n]{80,})'/g, (_, type: string) => `'${startOf(type, 60)} …'`);
  return compact.length <= MAX_DIAGNOSTIC_CHARS ? compact : `${compact.slice(0, MAX_DIAGNOSTIC_CHARS - 1)}…`;
}

/** The first `max` characters of a type, ended at its last `|`, `;` or `,` when one falls in the second half. */
function startOf(type: string, max: number): string {
  const cut = type.slice(0, max);
  const end = Math.max(cut.lastIndexOf(" |"), cut.lastIndexOf(";") + 1, cut.lastIndexOf(",") + 1);
  return end > max / 2 ? cut.slice(0, end) : cut;
}

export type TranspileOutput = { javascript: string; syntaxErrors: ScriptDiagnostic[] };

const APPENDED_EXPORT = "export {};\n";

/**
 * The output without the `export {};` the transpiler appends to a module without imports: the
 * last such line, when only comments and whitespace follow it (found by TypeScript's own scanner,
 * in linear time; a pattern over the comments could backtrack exponentially).
 */
function withoutAppendedExport(output: string): string {
  const at = output.lastIndexOf(APPENDED_EXPORT);
  if (at === -1 || (at > 0 && output[at - 1] !== "\n")) return output;
  const rest = output.slice(at + APPENDED_EXPORT.length);
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, true, ts.LanguageVariant.Standard, rest);
  return scanner.scan() === ts.SyntaxKind.EndOfFileToken ? output.slice(0, at) + rest : output;
}

/** Strips types (TypeScript) or only parses (JavaScript, returned unchanged). */

export function transpileScript(submitted: ts.SourceFile, language: "typescript" | "javascript"): TranspileOutput {
  const code = submitted.text;
  const out = ts.transpileModule(code, {
    compilerOptions: TRANSPILE_OPTIONS,
    fileName: language === "typescript" ? "script.ts" : "script.js",
    reportDiagnostics: true,
  });
  const syntaxErrors = (out.diagnostics ?? []).map((d) => {
    const { line, character } = submitted.getLineAndCharacterOfPosition(d.start ?? 0);
    return {
      offset: d.start ?? 0,
      message: `TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`,
      line: line + 1,
      column: character + 1,
    };
  });
  // A module without imports gets `export {};` appended to stay one, before the script's trailing
  // comments; a script body must not end in an export (and one written by the agent is a
  // module_syntax finding anyway).
  const javascript = language === "typescript" ? withoutAppendedExport(out.outputText) : code;
  return { javascript, syntaxErrors };
}
