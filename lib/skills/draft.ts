/**
 * Turning a pattern's script into a skill's code: pure text work, no I/O.
 *
 * - suggestInputs(code, language, varying): an input for every varying hole that can be bound,
 *   named after where the literal sits (`{ from: "…" }` → from, `const limit = 5` → limit, else
 *   p<n>), each name a distinct identifier;
 * - skillCode(code, language, inputs): the script as `async (args) => { … }` with each bound
 *   literal replaced by `args.<name>` (a template part by `${args.<name>}`); the parameter is
 *   renamed when the script already says `args`;
 * - skillArguments(holes, inputs): the arguments a past run of the pattern passed, read from its
 *   holes, typed as the input schema says (integer, number, boolean, string);
 * - toolArgumentSites(code, language, inputs): where a bound literal is a tool call's argument
 *   written out (`tools.ledger.listInvoices({ status: "paid" })`), and carriedConstraints: what
 *   that tool's input schema requires of it (its allowed values, bounds and lengths), so run_skill
 *   refuses arguments the tool would refuse before anything is stored;
 * - inputSchemaOf(inputs, constraints): the closed JSON Schema of those arguments, with the seen
 *   values as examples and each one's carried constraints;
 * - skillRunScript(code, args, language): the script run_skill runs, `return await (<code>)(<args JSON>);`,
 *   the arguments `as const` in TypeScript, so a string passed where a tool takes fixed values
 *   keeps its literal type.
 *
 * Refused (SkillDraftError, naming the hole): binding a hole that is not a value in an
 * expression (a literal type, an enum member's value, a bigint), an unknown hole, two inputs with
 * one name, a name that is not an identifier, and scripts with `import` declarations (a skill is
 * inlined into other scripts, where an import cannot go).
 */
import ts from "typescript";
import { compileToolSchema } from "@/lib/broker/schema-check";
import { canonicalJson } from "@/lib/canonical-json";
import { holeSites, type Hole, type HoleSite } from "@/lib/script-fingerprint";

export type SkillInput = { hole: number; name: string; type: "string" | "number" | "integer" | "boolean"; values: string[] };
export type JsonSchema = Record<string, unknown>;

export class SkillDraftError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SkillDraftError";
  }
}

export const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]{0,63}$/;
const RESERVED = new Set(
  "break case catch class const continue debugger default delete do else enum export extends false finally for function if import in instanceof new null return super switch this throw true try typeof var void while with yield let static implements interface package private protected public await async arguments eval tools inputs checks skills".split(
    " ",
  ),
);

/**
 * Whether `name` may name a property Airlock builds an object of (a skill's argument, a skill):
 * not one every object already has (`__proto__`, `constructor`, `toString`, …), which a schema's
 * `properties` or a script's `args.<name>` would read as the prototype's.
 */
export function isOwnPropertyName(name: string): boolean {
  return !(name in Object.prototype);
}

export function isInputName(name: string): boolean {
  return IDENTIFIER.test(name) && !RESERVED.has(name) && isOwnPropertyName(name);
}

function sitesOf(code: string, language: string): HoleSite[] {
  const sites = holeSites(code, language);
  const source = sites[0]?.node.getSourceFile();
  if (source?.statements.some((s) => ts.isImportDeclaration(s) || ts.isImportEqualsDeclaration(s))) {
    throw new SkillDraftError("The script imports modules; a skill is inlined into other scripts, where an import cannot go.");
  }
  return sites;
}

/** Why a hole cannot become an argument, or null when it can. */
function unbindable(site: HoleSite): string | null {
  if (site.type === "bigint") return "a bigint literal cannot be passed as JSON";
  for (let node: ts.Node | undefined = site.node.parent; node; node = node.parent) {
    if (ts.isTypeNode(node) && !ts.isExpressionWithTypeArguments(node)) return "it is part of a type";
    if (ts.isEnumMember(node)) return "it is an enum member's value";
    if (ts.isStatement(node) || ts.isSourceFile(node)) break;
  }
  return null;
}

function nameHint(site: HoleSite): string | null {
  let node = site.node;
  // A template part: its template expression; a negated number: the minus.
  if (ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) node = ts.isTemplateSpan(node.parent) ? node.parent.parent : node.parent;
  if (ts.isPrefixUnaryExpression(node.parent)) node = node.parent;
  const parent = node.parent;
  if (ts.isPropertyAssignment(parent) && parent.initializer === node && (ts.isIdentifier(parent.name) || ts.isStringLiteral(parent.name)))
    return parent.name.text;
  if (ts.isVariableDeclaration(parent) && parent.initializer === node && ts.isIdentifier(parent.name)) return parent.name.text;
  if (ts.isBinaryExpression(parent) && parent.right === node && ts.isPropertyAccessExpression(parent.left)) return parent.left.name.text;
  if (ts.isBinaryExpression(parent) && parent.right === node && ts.isIdentifier(parent.left)) return parent.left.text;
  return null;
}

/** The argument type of a hole, from the values it took. */
export function inputType(site: Pick<Hole, "type">, values: readonly string[]): SkillInput["type"] {
  if (site.type === "number") return values.every((v) => Number.isInteger(parseNumber(v))) ? "integer" : "number";
  return site.type === "boolean" ? "boolean" : "string";
}

/** A value a hole took, as its argument's type reads it. */
function valueOf(input: Pick<SkillInput, "type">, text: string): string | number | boolean {
  return input.type === "string" ? text : input.type === "boolean" ? text === "true" : parseNumber(text);
}

/** Where a tool call written out takes a bound literal as one of its arguments: `tools.<server>.<tool>({ filter: { status: <hole> } })`. */
export type ToolArgumentSite = { server: string; tool: string; path: string[] };

/** The tool argument each input's literal is, by hole; a literal that is only part of one (a template's text), or no tool's argument, has none. */
export function toolArgumentSites(code: string, language: string, inputs: readonly Pick<SkillInput, "hole">[]): Map<number, ToolArgumentSite> {
  const sites = sitesOf(code, language);
  const found = new Map<number, ToolArgumentSite>();
  for (const input of inputs) {
    const site = sites[input.hole];
    const at = site && toolArgumentSite(site);
    if (at) found.set(input.hole, at);
  }
  return found;
}

function toolArgumentSite(site: HoleSite): ToolArgumentSite | null {
  let node: ts.Node = site.node;
  if (ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) return null;
  if (ts.isPrefixUnaryExpression(node.parent)) node = node.parent;
  const path: string[] = [];
  for (;;) {
    const assignment = node.parent;
    if (!ts.isPropertyAssignment(assignment) || assignment.initializer !== node) return null;
    if (!ts.isIdentifier(assignment.name) && !ts.isStringLiteral(assignment.name)) return null;
    path.unshift(assignment.name.text);
    const object = assignment.parent;
    const call = object.parent;
    if (!ts.isCallExpression(call)) {
      node = object;
      continue;
    }
    if (call.arguments[0] !== object) return null;
    const callee = call.expression;
    const onTools =
      ts.isPropertyAccessExpression(callee) &&
      ts.isPropertyAccessExpression(callee.expression) &&
      ts.isIdentifier(callee.expression.expression) &&
      callee.expression.expression.text === "tools";
    return onTools ? { server: callee.expression.name.text, tool: callee.name.text, path } : null;
  }
}

/** The checks of a tool's argument schema a skill's argument carries: what it may be, and how big or long. */
const CARRIED = ["enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength"] as const;

/**
 * What `toolSchema` (a tool's input schema) requires of the argument at `path` that an input of
 * this type can carry; nothing when the schema does not say, or when a value the pattern's runs
 * passed would break it (the tests replay those values).
 */
export function carriedConstraints(toolSchema: unknown, path: readonly string[], input: Pick<SkillInput, "type" | "values">): JsonSchema {
  let schema: unknown = toolSchema;
  for (const key of path) {
    const properties = schema !== null && typeof schema === "object" ? (schema as { properties?: unknown }).properties : undefined;
    schema = properties !== null && typeof properties === "object" && Object.hasOwn(properties, key) ? (properties as Record<string, unknown>)[key] : undefined;
  }
  if (schema === null || typeof schema !== "object") return {};
  const carried: JsonSchema = {};
  for (const keyword of CARRIED) if (Object.hasOwn(schema, keyword)) carried[keyword] = (schema as JsonSchema)[keyword];
  if (Object.keys(carried).length === 0) return {};
  const check = compileToolSchema({ type: input.type, ...carried });
  if (check instanceof Error || input.values.some((text) => check(valueOf(input, text)).length > 0)) return {};
  return carried;
}

/** A numeric literal's value as written (`1_000`, `0x1f`, `1e3`). */
function parseNumber(text: string): number {
  return Number(text.replaceAll("_", ""));
}

export function suggestInputs(code: string, language: string, varying: readonly { index: number; values: string[] }[]): SkillInput[] {
  const sites = sitesOf(code, language);
  const taken = new Set<string>();
  const inputs: SkillInput[] = [];
  for (const hole of varying) {
    const site = sites[hole.index];
    if (!site || unbindable(site)) continue;
    const hint = nameHint(site);
    let name = hint && isInputName(hint) ? hint : `p${hole.index + 1}`;
    for (let n = 2; taken.has(name); n++) name = `${hint && isInputName(hint) ? hint : `p${hole.index + 1}`}${n}`;
    taken.add(name);
    inputs.push({ hole: hole.index, name, type: inputType(site, hole.values), values: hole.values });
  }
  return inputs;
}

function checkInputs(sites: readonly HoleSite[], inputs: readonly Pick<SkillInput, "hole" | "name">[]): void {
  const names = new Set<string>();
  const holes = new Set<number>();
  for (const input of inputs) {
    const site = sites[input.hole];
    if (!site) throw new SkillDraftError(`hole #${input.hole + 1} does not exist in the script (it has ${sites.length}).`);
    const why = unbindable(site);
    if (why) throw new SkillDraftError(`hole #${input.hole + 1} cannot be an argument: ${why}.`);
    if (!isInputName(input.name))
      throw new SkillDraftError(
        `"${input.name.slice(0, 64)}" cannot name an argument: use letters, digits, _ or $, not starting with a digit, and not a reserved word.`,
      );
    if (names.has(input.name)) throw new SkillDraftError(`two arguments are named ${input.name}.`);
    if (holes.has(input.hole)) throw new SkillDraftError(`hole #${input.hole + 1} is bound twice.`);
    names.add(input.name);
    holes.add(input.hole);
  }
}

export function skillCode(code: string, language: string, inputs: readonly Pick<SkillInput, "hole" | "name">[]): string {
  const sites = sitesOf(code, language);
  checkInputs(sites, inputs);
  let param = "args";
  for (let n = 2; new RegExp(`\\b${param}\\b`).test(code); n++) param = `args${n}`;
  const bound = inputs.map((input) => ({ input, site: sites[input.hole]! })).sort((a, b) => b.site.start - a.site.start);
  let body = code;
  for (const { input, site } of bound) {
    const template = ts.isTemplateHead(site.node) || ts.isTemplateMiddle(site.node) || ts.isTemplateTail(site.node);
    const reference = template ? `\${${param}.${input.name}}` : `${param}.${input.name}`;
    body = body.slice(0, site.start) + reference + body.slice(site.end);
  }
  return `async (${param}) => {\n${body}\n}`;
}

/** The argument a past run passed for each input, read from that run's holes. */
export function skillArguments(holes: readonly Hole[], inputs: readonly Pick<SkillInput, "hole" | "name" | "type">[]): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const input of inputs) {
    const hole = holes[input.hole];
    if (!hole) throw new SkillDraftError(`hole #${input.hole + 1} is missing from the run.`);
    const value = input.type === "integer" || input.type === "number" ? parseNumber(hole.value) : input.type === "boolean" ? hole.value === "true" : hole.value;
    Object.defineProperty(args, input.name, { value, enumerable: true, writable: true, configurable: true });
  }
  return args;
}

export function inputSchemaOf(inputs: readonly SkillInput[], constraints: ReadonlyMap<number, JsonSchema> = new Map()): JsonSchema {
  const properties: Record<string, unknown> = {};
  for (const input of inputs) {
    const examples = input.values.slice(0, 5).map((v) => valueOf(input, v));
    const value = { type: input.type, ...constraints.get(input.hole), examples };
    Object.defineProperty(properties, input.name, { value, enumerable: true, writable: true, configurable: true });
  }
  return { type: "object", properties, required: inputs.map((i) => i.name), additionalProperties: false };
}

export function skillRunScript(code: string, args: Record<string, unknown>, language: "typescript" | "javascript"): string {
  // `as const`: TypeScript would type {"status":"open"} as { status: string }, which a tool taking "open" | "paid" refuses.
  return `return await (${code})(${canonicalJson(args)}${language === "typescript" ? " as const" : ""});`;
}
