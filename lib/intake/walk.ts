/**
 * The syntactic half of analysis: one walk over a script's AST that yields
 * every `tools.<server>.<tool>` reference, every import specifier, the unbounded loops and the
 * findings that need no registry.
 *
 * Guarantees: a tool is counted whether it is called or only referenced (`const f =
 * tools.a.b`), so the capability set over-approximates what the script can call; any use of
 * `tools` (or of the global object) that this walk cannot pin to a literal server and tool is a
 * critical finding rather than a silent omission. Type-only syntax is skipped: it is erased
 * before the script runs.
 *
 * Refuses to guess: it does no data-flow analysis. Aliases (`const t = tools`), computed keys
 * (`tools[name]`), destructuring and spreading of `tools` are reported, not resolved.
 */
import ts from "typescript";
import { finding, type Finding } from "@/lib/contracts/analysis";

/**
 * `repeated`: this site can run more than once, because it sits in a loop or in a function (a
 * callback, a recursion), or because the tool is taken as a value instead of called in place.
 */
export type ToolReference = { capability: string; line: number; column: number; pos: number; repeated: boolean };
export type LoopSite = { line: number; column: number; start: number; end: number };
export type ImportSite = { specifier: string; line: number; column: number };

export type WalkResult = {
  toolRefs: ToolReference[];
  imports: ImportSite[];
  loops: LoopSite[];
  findings: Finding[];
};

const GLOBAL_OBJECTS = new Set(["globalThis", "global", "self", "window"]);
const CODE_LOADERS = new Set(["eval", "Function", "WebAssembly"]);
const TIMERS = new Set(["setTimeout", "setInterval", "setImmediate"]);

/** The reference itself, seen through the wrappers that do not change which object it is. */
function outermost(node: ts.Node): ts.Node {
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

function literalText(node: ts.Expression): string | undefined {
  return ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) ? node.text : undefined;
}

/** The statically known member name `x` of `expr.x` / `expr["x"]` when `node` is `expr`. */
function memberOf(node: ts.Node): { name: string | undefined; access: ts.Node } | undefined {
  const parent = node.parent;
  if (ts.isPropertyAccessExpression(parent) && parent.expression === node) {
    return { name: ts.isIdentifier(parent.name) ? parent.name.text : undefined, access: parent };
  }
  if (ts.isElementAccessExpression(parent) && parent.expression === node) {
    return { name: literalText(parent.argumentExpression), access: parent };
  }
  return undefined;
}

function isWriteTarget(node: ts.Node): boolean {
  const parent = node.parent;
  if (ts.isBinaryExpression(parent) && parent.left === node) {
    const op = parent.operatorToken.kind;
    return op >= ts.SyntaxKind.FirstAssignment && op <= ts.SyntaxKind.LastAssignment;
  }
  if (ts.isDeleteExpression(parent)) return true;
  if (ts.isPrefixUnaryExpression(parent) || ts.isPostfixUnaryExpression(parent)) {
    return parent.operator === ts.SyntaxKind.PlusPlusToken || parent.operator === ts.SyntaxKind.MinusMinusToken;
  }
  return false;
}

/** Identifiers that name a declaration or a property rather than read a binding. */
function isNonReference(id: ts.Identifier): boolean {
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
function declaredName(id: ts.Identifier): boolean {
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

function isAlwaysTrue(expr: ts.Expression | undefined): boolean {
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

function isStringLike(expr: ts.Expression): boolean {
  if (ts.isParenthesizedExpression(expr)) return isStringLike(expr.expression);
  if (ts.isStringLiteral(expr) || ts.isNoSubstitutionTemplateLiteral(expr) || ts.isTemplateExpression(expr)) {
    return true;
  }
  return ts.isBinaryExpression(expr) && expr.operatorToken.kind === ts.SyntaxKind.PlusToken && (isStringLike(expr.left) || isStringLike(expr.right));
}

/** Functions that rebind `this`; arrow functions do not. */
function bindsThis(node: ts.Node): boolean {
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
function isDynamicImport(node: ts.Node): node is ts.CallExpression {
  return ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword;
}

/** True if code at `node` can run more than once: it is inside a loop or a function. */
function canRepeat(node: ts.Node): boolean {
  for (let n = node.parent; n !== undefined && !ts.isSourceFile(n); n = n.parent) {
    if (ts.isIterationStatement(n, false) || ts.isFunctionLike(n) || ts.isClassStaticBlockDeclaration(n)) return true;
  }
  return false;
}

export function walkScript(sf: ts.SourceFile): WalkResult {
  const result: WalkResult = { toolRefs: [], imports: [], loops: [], findings: [] };
  const at = (node: ts.Node) => {
    const { line, character } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
    return { line: line + 1, column: character + 1 };
  };
  const report = (code: Parameters<typeof finding>[0], node: ts.Node, message: string) => {
    const { line, column } = at(node);
    result.findings.push(finding(code, message, line, column));
  };
  const addImport = (node: ts.Node, specifier: string) => {
    result.imports.push({ specifier, ...at(node) });
  };

  // Leading imports are hoisted out of the script body; anything module-level after them is not.
  let bodyStarted = false;
  for (const statement of sf.statements) {
    const isImport = ts.isImportDeclaration(statement) || ts.isImportEqualsDeclaration(statement);
    const isExport =
      ts.isExportDeclaration(statement) ||
      ts.isExportAssignment(statement) ||
      (ts.canHaveModifiers(statement) && (ts.getModifiers(statement) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword));
    if (isExport) {
      report("module_syntax", statement, "a script returns its result; it cannot export");
    } else if (isImport && bodyStarted) {
      report("module_syntax", statement, "imports must come before the first statement of the script");
    } else if (!isImport) {
      bodyStarted = true;
    }
  }

  const visitToolsReference = (id: ts.Identifier) => {
    const root = outermost(id);
    const server = memberOf(root);
    if (server === undefined) {
      report("dynamic_tool_access", id, "`tools` is aliased, passed, spread or destructured; call tools.<server>.<tool>(…) directly");
      return;
    }
    if (server.name === undefined) {
      report("dynamic_tool_access", id, "`tools[…]` with a computed server name; name the server literally");
      return;
    }
    const tool = memberOf(outermost(server.access));
    if (tool === undefined) {
      report("dynamic_tool_access", id, `\`tools.${server.name}\` is used as a value; call tools.${server.name}.<tool>(…) directly`);
      return;
    }
    if (tool.name === undefined) {
      report("dynamic_tool_access", id, `\`tools.${server.name}[…]\` with a computed tool name; name the tool literally`);
      return;
    }
    if (isWriteTarget(outermost(tool.access)) || isWriteTarget(outermost(server.access))) {
      report("dynamic_tool_access", id, `\`tools.${server.name}.${tool.name}\` is assigned or deleted`);
      return;
    }
    const { line, column } = at(id);
    const access = outermost(tool.access);
    const calledInPlace = ts.isCallExpression(access.parent) && access.parent.expression === access;
    result.toolRefs.push({ capability: `${server.name}.${tool.name}`, line, column, pos: id.getStart(sf), repeated: !calledInPlace || canRepeat(access) });
  };

  const classifyGlobalMember = (node: ts.Node, name: string, via: string) => {
    if (name === "tools") {
      report("dynamic_tool_access", node, `tools reached through ${via}; call tools.<server>.<tool>(…) directly`);
    } else if (CODE_LOADERS.has(name)) {
      report("eval_like", node, `${via}.${name} loads code at run time`);
    } else if (name === "process") {
      report("process_access", node, `${via}.process exposes the host process`);
    } else if (name === "require") {
      report("require_access", node, `${via}.require loads modules outside the allowlist`);
    } else if (GLOBAL_OBJECTS.has(name)) {
      report("computed_global", node, `${via}.${name} aliases the global object`);
    } else {
      report("global_object_access", node, `reads ${via}.${name}`);
    }
  };

  const visitGlobalObject = (node: ts.Node, via: string) => {
    const member = memberOf(outermost(node));
    if (member === undefined) {
      report("computed_global", node, `${via} is aliased or passed around, so what is read from it cannot be checked`);
    } else if (member.name === undefined) {
      report("computed_global", node, `${via}[…] reads a global chosen at run time`);
    } else {
      classifyGlobalMember(node, member.name, via);
    }
  };

  const visitTimer = (call: ts.CallExpression, name: string) => {
    const callback = call.arguments[0];
    if (callback === undefined || ts.isArrowFunction(callback) || ts.isFunctionExpression(callback)) return;
    if (isStringLike(callback)) {
      report("eval_like", call, `${name} with a string evaluates it as code`);
    } else {
      report("indirect_timer_callback", call, `${name} is given a callback that is not a function literal`);
    }
  };

  const visitImportSpecifier = (node: ts.Node, specifier: ts.Expression | undefined) => {
    const text = specifier === undefined ? undefined : literalText(specifier);
    if (text === undefined) {
      report("eval_like", node, "import() with a computed specifier loads code chosen at run time");
    } else {
      addImport(node, text);
    }
  };

  const visit = (node: ts.Node, thisIsGlobal: boolean): void => {
    // Type syntax is erased before the script runs. `class A extends B` keeps its expression.
    if (ts.isTypeNode(node) && !ts.isExpressionWithTypeArguments(node)) return;
    if (ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node)) return;
    if (ts.isImportDeclaration(node) && node.importClause?.isTypeOnly) return;

    if (ts.isIdentifier(node)) {
      if (declaredName(node) && node.text === "tools") {
        report("dynamic_tool_access", node, "the script declares its own `tools`, shadowing the runtime's");
      } else if (declaredName(node) && GLOBAL_OBJECTS.has(node.text)) {
        report("computed_global", node, `the script declares its own \`${node.text}\`, so reads from it cannot be checked`);
      } else if (!isNonReference(node)) {
        const name = node.text;
        if (name === "tools") visitToolsReference(node);
        else if (GLOBAL_OBJECTS.has(name)) visitGlobalObject(node, name);
        else if (CODE_LOADERS.has(name)) report("eval_like", node, `${name} loads code at run time`);
        else if (name === "process") report("process_access", node, "`process` exposes the host process");
        else if (name === "require") report("require_access", node, "`require` loads modules outside the allowlist");
      }
      return;
    }

    if (node.kind === ts.SyntaxKind.ThisKeyword && thisIsGlobal) {
      visitGlobalObject(node, "top-level this");
      return;
    }

    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) {
      if (node.moduleSpecifier !== undefined) visitImportSpecifier(node, node.moduleSpecifier);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      visitImportSpecifier(node, node.moduleReference.expression);
    } else if (isDynamicImport(node)) {
      visitImportSpecifier(node, node.arguments[0]);
    } else if (ts.isCallExpression(node)) {
      const callee = node.expression;
      if (ts.isIdentifier(callee) && TIMERS.has(callee.text)) visitTimer(node, callee.text);
    }

    const constructorName =
      (ts.isPropertyAccessExpression(node) && ts.isIdentifier(node.name) && node.name.text === "constructor") ||
      (ts.isElementAccessExpression(node) && literalText(node.argumentExpression) === "constructor");
    if (constructorName) {
      const used = outermost(node);
      const parent = used.parent;
      const invoked = ((ts.isCallExpression(parent) || ts.isNewExpression(parent)) && parent.expression === used) || memberOf(used)?.name === "constructor";
      if (invoked) report("eval_like", node, "calling a .constructor can reach Function and compile code");
      else report("constructor_access", node, "reads .constructor");
    }

    if (((ts.isWhileStatement(node) || ts.isDoStatement(node)) && isAlwaysTrue(node.expression)) || (ts.isForStatement(node) && isAlwaysTrue(node.condition))) {
      result.loops.push({ ...at(node), start: node.getStart(sf), end: node.end });
    }

    const childThisIsGlobal = thisIsGlobal && !bindsThis(node);
    ts.forEachChild(node, (child) => visit(child, childThisIsGlobal));
  };

  for (const statement of sf.statements) visit(statement, true);
  return result;
}
