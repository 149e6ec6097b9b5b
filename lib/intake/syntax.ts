/**
 * Syntax predicates the script walk (walk.ts) is built from: what a node refers to, whether it is
 * written to, whether it can run more than once. Pure functions of TypeScript's AST; no scope or
 * data-flow analysis, so each answers for the syntax in front of it only.
 */
import ts from "typescript";

/** The reference itself, seen through the wrappers that do not change which object it is. */
export function outermost(node: ts.Node): ts.Node {
  let current = node;
  while (
    ts.isParenthesizedExpression(current.parent) ||
    ts.isAsExpression(current.parent) ||
    ts.isNonNullExpression(current.parent) ||
    ts.isSatisfiesExpression(current.parent) ||
    ts.isTypeAssertionExpression(current.parent)
  ) {
    current = current.parent;
  }
  return current;
}

export function literalText(node: ts.Expression): string | undefined {
  return ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) ? node.text : undefined;
}

/** The statically known member name `x` of `expr.x` / `expr["x"]` when `node` is `expr`. */
export function memberOf(node: ts.Node): { name: string | undefined; access: ts.Node } | undefined {
  const parent = node.parent;
  if (ts.isPropertyAccessExpression(parent) && parent.expression === node) {
    return { name: ts.isIdentifier(parent.name) ? parent.name.text : undefined, access: parent };
  }
  if (ts.isElementAccessExpression(parent) && parent.expression === node) {
    return { name: literalText(parent.argumentExpression), access: parent };
  }
  return undefined;
}

/** A call of `<anything>.getPrototypeOf(x)`, which hands out x's prototype. */
function isPrototypeGetter(node: ts.Node): node is ts.CallExpression {
  return ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && node.expression.name.text === "getPrototypeOf";
}

export function isPrototypeAccess(node: ts.Node): boolean {
  if (isPrototypeGetter(node)) return true;
  const name = ts.isPropertyAccessExpression(node) ? node.name.text : ts.isElementAccessExpression(node) ? literalText(node.argumentExpression) : undefined;
  return name === "prototype" || name === "__proto__";
}

/** What a member chain such as `events.EventEmitter.prototype.emit` starts from and whether it passes through a prototype. */
export function chainOf(expr: ts.Expression): { root: string | undefined; prototype: boolean } {
  let prototype = false;
  let node: ts.Expression = expr;
  for (;;) {
    if (isPrototypeAccess(node)) prototype = true;
    if (ts.isParenthesizedExpression(node) || ts.isAsExpression(node) || ts.isNonNullExpression(node) || ts.isSatisfiesExpression(node)) {
      node = node.expression;
    } else if (ts.isTypeAssertionExpression(node) || ts.isPropertyAccessExpression(node) || ts.isElementAccessExpression(node)) {
      node = node.expression;
    } else if (isPrototypeGetter(node) && node.arguments[0] !== undefined) {
      node = node.arguments[0];
    } else {
      return { root: ts.isIdentifier(node) ? node.text : undefined, prototype };
    }
  }
}

/** `node` is written to: assigned (also inside a destructuring pattern or a for-in/of head), incremented or deleted. */
export function isWriteTarget(node: ts.Node): boolean {
  const parent = node.parent;
  if (ts.isParenthesizedExpression(parent)) return isWriteTarget(parent);
  if (ts.isBinaryExpression(parent) && parent.left === node) {
    const op = parent.operatorToken.kind;
    return op >= ts.SyntaxKind.FirstAssignment && op <= ts.SyntaxKind.LastAssignment;
  }
  if (ts.isDeleteExpression(parent)) return true;
  if (ts.isPrefixUnaryExpression(parent) || ts.isPostfixUnaryExpression(parent)) {
    return parent.operator === ts.SyntaxKind.PlusPlusToken || parent.operator === ts.SyntaxKind.MinusMinusToken;
  }
  if (ts.isForInStatement(parent) || ts.isForOfStatement(parent)) return parent.initializer === node;
  if (ts.isArrayLiteralExpression(parent) || ts.isSpreadElement(parent)) return isWriteTarget(parent);
  if (ts.isPropertyAssignment(parent) || ts.isSpreadAssignment(parent)) {
    return (ts.isPropertyAssignment(parent) ? parent.initializer === node : true) && isWriteTarget(parent.parent);
  }
  return false;
}

/** Identifiers that name a declaration or a property rather than read a binding. */
export function isNonReference(id: ts.Identifier): boolean {
  const parent = id.parent;
  if (ts.isShorthandPropertyAssignment(parent)) return false;
  if (ts.isPropertyAccessExpression(parent)) return parent.name === id;
  if (ts.isQualifiedName(parent)) return parent.right === id;
  if (ts.isBindingElement(parent)) return parent.name === id || parent.propertyName === id;
  if (ts.isMetaProperty(parent)) return true;
  if (
    ts.isLabeledStatement(parent) ||
    ts.isBreakOrContinueStatement(parent) ||
    ts.isImportClause(parent) ||
    ts.isImportSpecifier(parent) ||
    ts.isNamespaceImport(parent) ||
    ts.isExportSpecifier(parent) ||
    ts.isImportEqualsDeclaration(parent)
  ) {
    return true;
  }
  return "name" in parent && (parent as { name?: ts.Node }).name === id && isDeclarationLike(parent);
}

function isDeclarationLike(node: ts.Node): boolean {
  return (
    ts.isVariableDeclaration(node) ||
    ts.isParameter(node) ||
    ts.isFunctionLike(node) ||
    ts.isClassLike(node) ||
    ts.isPropertyAssignment(node) ||
    ts.isPropertyDeclaration(node) ||
    ts.isPropertySignature(node) ||
    ts.isEnumDeclaration(node) ||
    ts.isEnumMember(node) ||
    ts.isModuleDeclaration(node) ||
    ts.isInterfaceDeclaration(node) ||
    ts.isTypeAliasDeclaration(node) ||
    ts.isTypeParameterDeclaration(node)
  );
}

/** Names bound by a declaration, e.g. `tools` in `const { tools } = x` or `function tools() {}`. */
export function declaredName(id: ts.Identifier): boolean {
  const parent = id.parent;
  if (ts.isBindingElement(parent)) return parent.name === id;
  if (ts.isImportClause(parent) || ts.isImportSpecifier(parent) || ts.isNamespaceImport(parent)) {
    return parent.name === id;
  }
  if (ts.isImportEqualsDeclaration(parent)) return parent.name === id;
  return (
    (ts.isVariableDeclaration(parent) ||
      ts.isParameter(parent) ||
      ts.isFunctionDeclaration(parent) ||
      ts.isFunctionExpression(parent) ||
      ts.isClassDeclaration(parent) ||
      ts.isClassExpression(parent) ||
      ts.isEnumDeclaration(parent) ||
      ts.isModuleDeclaration(parent)) &&
    parent.name === id
  );
}

export function isAlwaysTrue(expr: ts.Expression | undefined): boolean {
  if (expr === undefined) return true;
  if (ts.isParenthesizedExpression(expr)) return isAlwaysTrue(expr.expression);
  if (expr.kind === ts.SyntaxKind.TrueKeyword) return true;
  if (ts.isNumericLiteral(expr)) return Number(expr.text) !== 0;
  if (ts.isStringLiteral(expr) || ts.isNoSubstitutionTemplateLiteral(expr)) return expr.text !== "";
  if (ts.isPrefixUnaryExpression(expr) && expr.operator === ts.SyntaxKind.ExclamationToken) {
    const operand = expr.operand;
    return operand.kind === ts.SyntaxKind.FalseKeyword || (ts.isNumericLiteral(operand) && Number(operand.text) === 0);
  }
  return false;
}

export function isStringLike(expr: ts.Expression): boolean {
  if (ts.isParenthesizedExpression(expr)) return isStringLike(expr.expression);
  if (ts.isStringLiteral(expr) || ts.isNoSubstitutionTemplateLiteral(expr) || ts.isTemplateExpression(expr)) {
    return true;
  }
  return ts.isBinaryExpression(expr) && expr.operatorToken.kind === ts.SyntaxKind.PlusToken && (isStringLike(expr.left) || isStringLike(expr.right));
}

/** Functions that rebind `this`; arrow functions do not. */
export function bindsThis(node: ts.Node): boolean {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isFunctionExpression(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node) ||
    ts.isClassLike(node)
  );
}

/** `node` is the `import(...)` call's callee keyword. */
export function isDynamicImport(node: ts.Node): node is ts.CallExpression {
  return ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword;
}

/** True if code at `node` can run more than once: it is inside a loop or a function. */
export function canRepeat(node: ts.Node): boolean {
  for (let n = node.parent; n !== undefined && !ts.isSourceFile(n); n = n.parent) {
    if (ts.isIterationStatement(n, false) || ts.isFunctionLike(n) || ts.isClassStaticBlockDeclaration(n)) return true;
  }
  return false;
}
