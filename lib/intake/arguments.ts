/**
 * Tool-call arguments checked before anyone reviews. Every `tools.<server>.<tool>(…)` call is
 * found, and the part of its argument known statically is validated against the tool's
 * inputSchema with the broker's own validation (lib/broker/schema-check.ts), so a call the broker
 * would certainly refuse is an `argument_invalid` finding at the property that breaks the rule.
 *
 * Known statically: string, number, boolean and null literals, template strings without
 * substitutions, unary minus on a number, a `const` of such a value declared in a scope around
 * the call (a nearer declaration of the name by anything else makes it unknown), and object and
 * array literals made only of these. A property with any other value is skipped: not checked and
 * not reported missing. A missing required property counts only in an object literal with no
 * spread, no computed key and no type assertion (`tools.x.y({} as any)` is not checked for it).
 *
 * Refuses to guess: an argument that is neither an object literal nor a static value is not
 * checked here; the broker still checks every call at run time.
 */
import ts from "typescript";
import { finding, type Finding } from "@/lib/contracts/analysis";
import type { JsonValue } from "@/lib/untrusted/safe-json";
import { sanitizeText } from "@/lib/untrusted/sanitize";
import { compileToolSchema, type SchemaIssue } from "@/lib/broker/schema-check";
import { literalText } from "./syntax";

const UNKNOWN = Symbol("unknown");
type Static = JsonValue | typeof UNKNOWN;
const MAX_CONST_DEPTH = 8;
/** Keywords about the object as a whole, meaningless when some of its properties are unknown. */
const WHOLE_OBJECT_KEYWORDS = new Set(["required", "anyOf", "oneOf", "not", "if", "dependentRequired", "dependencies", "dependentSchemas", "minProperties"]);

export type ToolCallArguments = {
  findings: Finding[];
  /** [start, end) of every tool call's argument list, for telling argument type errors from others. */
  argumentSpans: [number, number][];
};

function unwrap(expr: ts.Expression): ts.Expression {
  return ts.isParenthesizedExpression(expr) || ts.isSatisfiesExpression(expr) || ts.isNonNullExpression(expr) ? unwrap(expr.expression) : expr;
}

function memberName(expr: ts.Expression): string | undefined {
  if (ts.isPropertyAccessExpression(expr)) return ts.isIdentifier(expr.name) ? expr.name.text : undefined;
  if (ts.isElementAccessExpression(expr)) return literalText(expr.argumentExpression);
  return undefined;
}

/** "server.tool" when `callee` is `tools.server.tool` with literal names. */
function capabilityOf(callee: ts.Expression): string | undefined {
  const toolAccess = unwrap(callee);
  const tool = memberName(toolAccess);
  if (tool === undefined || !(ts.isPropertyAccessExpression(toolAccess) || ts.isElementAccessExpression(toolAccess))) return undefined;
  const serverAccess = unwrap(toolAccess.expression);
  const server = memberName(serverAccess);
  if (server === undefined || !(ts.isPropertyAccessExpression(serverAccess) || ts.isElementAccessExpression(serverAccess))) return undefined;
  const root = unwrap(serverAccess.expression);
  return ts.isIdentifier(root) && root.text === "tools" ? `${server}.${tool}` : undefined;
}

function propertyName(name: ts.PropertyName): string | undefined {
  if (ts.isIdentifier(name) || ts.isStringLiteral(name) || ts.isNumericLiteral(name) || ts.isNoSubstitutionTemplateLiteral(name)) return name.text;
  return undefined;
}

function bindsName(binding: ts.BindingName, name: string): boolean {
  if (ts.isIdentifier(binding)) return binding.text === name;
  return binding.elements.some((element) => !ts.isOmittedExpression(element) && bindsName(element.name, name));
}

/** The value of the const `name` as seen from `from`: the nearest declaration of the name decides. */
function resolveConst(name: string, from: ts.Node, depth: number): Static {
  for (let scope = from.parent; scope !== undefined; scope = scope.parent) {
    if (ts.isFunctionLike(scope)) {
      if (scope.parameters.some((p) => bindsName(p.name, name))) return UNKNOWN;
      if (ts.isFunctionExpression(scope) && scope.name?.text === name) return UNKNOWN;
    }
    if (
      (ts.isForStatement(scope) || ts.isForInStatement(scope) || ts.isForOfStatement(scope)) &&
      scope.initializer &&
      ts.isVariableDeclarationList(scope.initializer)
    ) {
      if (scope.initializer.declarations.some((d) => bindsName(d.name, name))) return UNKNOWN;
    }
    if (ts.isCatchClause(scope) && scope.variableDeclaration && bindsName(scope.variableDeclaration.name, name)) return UNKNOWN;
    const statements =
      ts.isSourceFile(scope) || ts.isBlock(scope) || ts.isModuleBlock(scope) || ts.isCaseClause(scope) || ts.isDefaultClause(scope) ? scope.statements : [];
    for (const statement of statements) {
      if (ts.isVariableStatement(statement)) {
        const declaration = statement.declarationList.declarations.find((d) => bindsName(d.name, name));
        if (declaration === undefined) continue;
        const isConst = (statement.declarationList.flags & ts.NodeFlags.Const) !== 0;
        if (!isConst || !ts.isIdentifier(declaration.name) || declaration.initializer === undefined) return UNKNOWN;
        return staticValue(declaration.initializer, depth + 1);
      }
      if ((ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement) || ts.isEnumDeclaration(statement)) && statement.name?.text === name)
        return UNKNOWN;
      if (ts.isImportDeclaration(statement) && statement.importClause && importBinds(statement.importClause, name)) return UNKNOWN;
    }
  }
  return UNKNOWN;
}

function importBinds(clause: ts.ImportClause, name: string): boolean {
  if (clause.name?.text === name) return true;
  const bindings = clause.namedBindings;
  if (bindings && ts.isNamespaceImport(bindings)) return bindings.name.text === name;
  return bindings !== undefined && ts.isNamedImports(bindings) && bindings.elements.some((e) => e.name.text === name);
}

function staticValue(node: ts.Expression, depth = 0): Static {
  if (depth > MAX_CONST_DEPTH) return UNKNOWN;
  const expr = unwrap(node);
  if (ts.isStringLiteral(expr) || ts.isNoSubstitutionTemplateLiteral(expr)) return expr.text;
  if (ts.isNumericLiteral(expr)) return Number(expr.text);
  if (ts.isPrefixUnaryExpression(expr) && expr.operator === ts.SyntaxKind.MinusToken && ts.isNumericLiteral(expr.operand)) return -Number(expr.operand.text);
  if (expr.kind === ts.SyntaxKind.TrueKeyword) return true;
  if (expr.kind === ts.SyntaxKind.FalseKeyword) return false;
  if (expr.kind === ts.SyntaxKind.NullKeyword) return null;
  if (ts.isIdentifier(expr)) return resolveConst(expr.text, expr, depth);
  if (ts.isArrayLiteralExpression(expr)) {
    const items = expr.elements.map((element) => (ts.isSpreadElement(element) || ts.isOmittedExpression(element) ? UNKNOWN : staticValue(element, depth)));
    return items.includes(UNKNOWN) ? UNKNOWN : (items as JsonValue[]);
  }
  if (ts.isObjectLiteralExpression(expr)) {
    const partial = partialObject(expr, depth);
    return partial.complete && partial.unknown.size === 0 ? partial.value : UNKNOWN;
  }
  return UNKNOWN;
}

type PartialObject = {
  value: { [key: string]: JsonValue };
  /** Where each known property is written, for the finding's position. */
  at: Map<string, ts.Node>;
  /** Properties present with a value not known statically. */
  unknown: Set<string>;
  /** False with a spread, a computed key, a method or an accessor: properties may exist that are not listed. */
  complete: boolean;
};

function partialObject(literal: ts.ObjectLiteralExpression, depth: number): PartialObject {
  const result: PartialObject = { value: Object.create(null) as { [key: string]: JsonValue }, at: new Map(), unknown: new Set(), complete: true };
  for (const property of literal.properties) {
    const name = ts.isPropertyAssignment(property) || ts.isShorthandPropertyAssignment(property) ? propertyName(property.name) : undefined;
    if (name === undefined) {
      result.complete = false;
      continue;
    }
    const value = ts.isPropertyAssignment(property) ? staticValue(property.initializer, depth) : resolveConst(name, property, depth);
    if (value === UNKNOWN) {
      result.unknown.add(name);
      delete result.value[name];
    } else {
      result.value[name] = value;
      result.unknown.delete(name);
    }
    result.at.set(name, property);
  }
  return result;
}

/** "items[0].amount" for the JSON Pointer "/items/0/amount". */
function argumentName(pointer: string): string {
  const parts = pointer
    .split("/")
    .slice(1)
    .map((p) => p.replaceAll("~1", "/").replaceAll("~0", "~"));
  return parts.map((part, i) => (/^\d+$/.test(part) ? `[${part}]` : i === 0 ? part : `.${part}`)).join("");
}

function describeIssue(issue: SchemaIssue): string {
  const where = argumentName(issue.path);
  const within = (name: unknown) => (where ? `${where}.${String(name)}` : String(name));
  switch (issue.keyword) {
    case "required":
      return `${within(issue.params.missingProperty)} is required (required)`;
    case "additionalProperties":
      return `${within(issue.params.additionalProperty)} is not an argument of this tool (additionalProperties)`;
    case "enum":
      return `${where || "the argument"} must be one of ${(issue.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(", ")} (enum)`;
    default:
      return `${where || "the argument"} ${issue.message} (${issue.keyword})`;
  }
}

function argumentOf(call: ts.CallExpression): { value: JsonValue; partial?: PartialObject } | undefined {
  const first = call.arguments[0];
  if (first === undefined) return { value: {} };
  let expr = unwrap(first);
  let asserted = false;
  while (ts.isAsExpression(expr) || ts.isTypeAssertionExpression(expr)) {
    asserted = true;
    expr = unwrap(expr.expression);
  }
  if (ts.isObjectLiteralExpression(expr)) {
    const partial = partialObject(expr, 0);
    if (asserted) partial.complete = false;
    return { value: partial.value, partial };
  }
  const value = asserted ? UNKNOWN : staticValue(expr);
  return value === UNKNOWN ? undefined : { value };
}

export function checkToolArguments(sf: ts.SourceFile, inputSchemas: ReadonlyMap<string, Record<string, unknown>>): ToolCallArguments {
  const result: ToolCallArguments = { findings: [], argumentSpans: [] };
  const report = (node: ts.Node, message: string) => {
    const { line, character } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
    result.findings.push(finding("argument_invalid", sanitizeText(message, 500), line + 1, character + 1));
  };
  const checks = new Map<string, ReturnType<typeof compileToolSchema>>();
  const visit = (node: ts.Node): void => {
    const capability = ts.isCallExpression(node) ? capabilityOf(node.expression) : undefined;
    if (capability !== undefined && ts.isCallExpression(node)) {
      result.argumentSpans.push([node.arguments.pos, node.arguments.end]);
      const schema = inputSchemas.get(capability);
      const argument = schema === undefined ? undefined : argumentOf(node);
      if (schema !== undefined && argument !== undefined) {
        if (!checks.has(capability)) checks.set(capability, compileToolSchema(schema));
        const check = checks.get(capability)!;
        const partial = argument.partial;
        const whole = partial === undefined || (partial.complete && partial.unknown.size === 0);
        const issues = check instanceof Error ? [] : check(argument.value);
        for (const issue of issues) {
          if (!whole && issue.path === "" && WHOLE_OBJECT_KEYWORDS.has(issue.keyword)) continue;
          const property = issue.path.split("/")[1]?.replaceAll("~1", "/").replaceAll("~0", "~");
          const at = (property !== undefined && partial?.at.get(property)) || node.arguments[0] || node;
          report(at, `tools.${capability}: ${describeIssue(issue)}`);
        }
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return result;
}
