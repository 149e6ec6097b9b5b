/**
 * The script's tool calls as a reviewer reads them: every `tools.<server>.<tool>` reference, in
 * source order, with the arguments of a direct call listed one property per row, so no argument
 * hides at the end of a long line.
 *
 * Guarantees: pure (TypeScript's parser only; no registry, no I/O). A value is `known` only when
 * the source spells it out: a string, number, boolean or null literal, a template without
 * substitutions, a negative number, or an array or object literal made only of these; it is shown
 * as the JSON of that value, so escapes such as "\u202e" appear as the character they make (for
 * components/ui/inert.tsx to mark). Every other value is computed at run time and is shown as its
 * source text. A property that a later spread may replace is not known. Where an object literal
 * names a property twice, the last one is listed: it is the one that runs. Line and column are
 * 1-based, the lines of the analysis findings. Strings come from the script and keep every
 * character (inertCode), capped.
 *
 * Refuses to guess: no data flow. A `const` is not followed (its name is shown), and a tool taken
 * as a value (`const f = tools.a.b`, `tools.a.b.call(…)`) is listed as a reference whose calls
 * are not listed. Aliases of `tools` and computed names are critical findings of the analysis and
 * are not listed here.
 */
import ts from "typescript";
import type { JsonValue } from "@/lib/untrusted/safe-json";
import { inertCode } from "@/lib/untrusted/inert";

export type CallArgument = {
  /** The property name, `…expr` for a spread, `[expr]` for a computed key, or "(argument N)" for an argument that is not an object literal. */
  name: string;
  known: boolean;
  /** The value as JSON when known, else the expression's source text. */
  value: string;
  /** Why a value written as a literal is still not known, e.g. a later spread may replace it. */
  note: string | null;
};

export type ToolUse = {
  /** `server.tool`. */
  tool: string;
  line: number;
  column: number;
  /** False when the tool is taken as a value instead of called in place: its arguments are not in the source. */
  called: boolean;
  arguments: CallArgument[];
  /** Arguments past the cap, not listed. */
  moreArguments: number;
};

export type ToolUses = { uses: ToolUse[]; /** References past the cap, not listed. */ omitted: number };

const MAX_USES = 200;
const MAX_ARGUMENTS = 50;
const MAX_TEXT = 500;
const UNKNOWN = Symbol("unknown");

function unwrap(expr: ts.Expression): ts.Expression {
  return ts.isParenthesizedExpression(expr) ||
    ts.isSatisfiesExpression(expr) ||
    ts.isNonNullExpression(expr) ||
    ts.isAsExpression(expr) ||
    ts.isTypeAssertionExpression(expr)
    ? unwrap(expr.expression)
    : expr;
}

function literalName(expr: ts.Expression): string | undefined {
  return ts.isStringLiteral(expr) || ts.isNoSubstitutionTemplateLiteral(expr) ? expr.text : undefined;
}

/** `name` of `x.name` / `x["name"]`, when written literally. */
function memberName(node: ts.Node): string | undefined {
  if (ts.isPropertyAccessExpression(node)) return ts.isIdentifier(node.name) ? node.name.text : undefined;
  if (ts.isElementAccessExpression(node)) return literalName(node.argumentExpression);
  return undefined;
}

/** `tools.server.tool` when `node` is the `tools` identifier at the root of that chain. */
function toolAccess(node: ts.Identifier): { capability: string; access: ts.Expression } | undefined {
  const serverAccess = node.parent;
  if (!(ts.isPropertyAccessExpression(serverAccess) || ts.isElementAccessExpression(serverAccess)) || serverAccess.expression !== node) return undefined;
  const toolNode = serverAccess.parent;
  if (!(ts.isPropertyAccessExpression(toolNode) || ts.isElementAccessExpression(toolNode)) || toolNode.expression !== serverAccess) return undefined;
  const server = memberName(serverAccess);
  const tool = memberName(toolNode);
  return server === undefined || tool === undefined ? undefined : { capability: `${server}.${tool}`, access: toolNode };
}

function propertyName(name: ts.PropertyName, sf: ts.SourceFile): string {
  if (ts.isIdentifier(name) || ts.isStringLiteral(name) || ts.isNumericLiteral(name) || ts.isNoSubstitutionTemplateLiteral(name)) return name.text;
  if (ts.isPrivateIdentifier(name)) return name.text;
  return name.getText(sf);
}

/** JSON has no Infinity: such a number is shown as written. */
function finite(value: number): number | typeof UNKNOWN {
  return Number.isFinite(value) ? value : UNKNOWN;
}

function literalValue(node: ts.Expression, sf: ts.SourceFile): JsonValue | typeof UNKNOWN {
  const expr = unwrap(node);
  if (ts.isStringLiteral(expr) || ts.isNoSubstitutionTemplateLiteral(expr)) return expr.text;
  if (ts.isNumericLiteral(expr)) return finite(Number(expr.text));
  if (ts.isPrefixUnaryExpression(expr) && expr.operator === ts.SyntaxKind.MinusToken && ts.isNumericLiteral(expr.operand))
    return finite(-Number(expr.operand.text));
  if (expr.kind === ts.SyntaxKind.TrueKeyword) return true;
  if (expr.kind === ts.SyntaxKind.FalseKeyword) return false;
  if (expr.kind === ts.SyntaxKind.NullKeyword) return null;
  if (ts.isArrayLiteralExpression(expr)) {
    const items = expr.elements.map((e) => (ts.isSpreadElement(e) || ts.isOmittedExpression(e) ? UNKNOWN : literalValue(e, sf)));
    return items.includes(UNKNOWN) ? UNKNOWN : (items as JsonValue[]);
  }
  if (ts.isObjectLiteralExpression(expr)) {
    const value: { [key: string]: JsonValue } = Object.create(null) as { [key: string]: JsonValue };
    for (const property of expr.properties) {
      if (!ts.isPropertyAssignment(property) || ts.isComputedPropertyName(property.name)) return UNKNOWN;
      const item = literalValue(property.initializer, sf);
      if (item === UNKNOWN) return UNKNOWN;
      value[propertyName(property.name, sf)] = item;
    }
    return value;
  }
  return UNKNOWN;
}

function text(value: string): string {
  return inertCode(value, MAX_TEXT);
}

function valueOf(expr: ts.Expression, sf: ts.SourceFile): { known: boolean; value: string } {
  const value = literalValue(expr, sf);
  return value === UNKNOWN ? { known: false, value: text(expr.getText(sf)) } : { known: true, value: text(JSON.stringify(value)) };
}

/** One row per property of an object literal, in source order; a name written twice keeps its last place and value. */
function objectArguments(literal: ts.ObjectLiteralExpression, sf: ts.SourceFile): CallArgument[] {
  const rows: CallArgument[] = [];
  for (const property of literal.properties) {
    if (ts.isSpreadAssignment(property)) {
      for (const row of rows) {
        if (row.known) Object.assign(row, { known: false, note: `a later …${property.expression.getText(sf)} may replace it` });
      }
      rows.push({ name: text(`…${property.expression.getText(sf)}`), known: false, value: text(property.expression.getText(sf)), note: null });
      continue;
    }
    const computed = property.name !== undefined && ts.isComputedPropertyName(property.name);
    const name = property.name === undefined ? "" : computed ? property.name.getText(sf) : propertyName(property.name, sf);
    const shown = ts.isPropertyAssignment(property)
      ? computed
        ? { known: false, value: text(property.initializer.getText(sf)) }
        : valueOf(property.initializer, sf)
      : { known: false, value: text(property.getText(sf)) };
    const earlier = computed ? -1 : rows.findIndex((row) => row.name === text(name));
    if (earlier >= 0) rows.splice(earlier, 1);
    rows.push({ name: text(name), ...shown, note: null });
  }
  return rows;
}

function callArguments(call: ts.CallExpression, sf: ts.SourceFile): Pick<ToolUse, "arguments" | "moreArguments"> {
  const rows = call.arguments.flatMap((argument, i): CallArgument[] => {
    const expr = unwrap(argument);
    if (i === 0 && ts.isObjectLiteralExpression(expr)) return objectArguments(expr, sf);
    const name = ts.isSpreadElement(argument) ? text(`…${argument.expression.getText(sf)}`) : `(argument ${i + 1})`;
    return [{ name, ...(ts.isSpreadElement(argument) ? { known: false, value: text(argument.expression.getText(sf)) } : valueOf(argument, sf)), note: null }];
  });
  return { arguments: rows.slice(0, MAX_ARGUMENTS), moreArguments: Math.max(0, rows.length - MAX_ARGUMENTS) };
}

/** The call that invokes `access` in place (through parentheses and assertions), if any. */
function callOf(access: ts.Expression): ts.CallExpression | undefined {
  let node: ts.Node = access;
  while (
    ts.isParenthesizedExpression(node.parent) ||
    ts.isNonNullExpression(node.parent) ||
    ts.isAsExpression(node.parent) ||
    ts.isSatisfiesExpression(node.parent) ||
    ts.isTypeAssertionExpression(node.parent)
  ) {
    node = node.parent;
  }
  return ts.isCallExpression(node.parent) && node.parent.expression === node ? node.parent : undefined;
}

function markAsModule(file: ts.SourceFile): void {
  (file as { externalModuleIndicator?: true }).externalModuleIndicator = true;
}

/** Parses the script the way analysis does (a module: imports and top-level await) and lists its tool references. */
export function toolUses(code: string, language: string): ToolUses {
  const sf = ts.createSourceFile(
    language === "typescript" ? "script.ts" : "script.js",
    code,
    { languageVersion: ts.ScriptTarget.Latest, setExternalModuleIndicator: markAsModule },
    true,
    language === "typescript" ? ts.ScriptKind.TS : ts.ScriptKind.JS,
  );
  const uses: ToolUse[] = [];
  let omitted = 0;
  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node) && node.text === "tools") {
      const found = toolAccess(node);
      if (found && uses.length >= MAX_USES) omitted++;
      else if (found) {
        const { line, character } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
        const call = callOf(found.access);
        uses.push({
          tool: text(found.capability),
          line: line + 1,
          column: character + 1,
          called: call !== undefined,
          ...(call ? callArguments(call, sf) : { arguments: [], moreArguments: 0 }),
        });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return { uses, omitted };
}
