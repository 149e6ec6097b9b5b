/**
 * The syntactic half of analysis: one walk over a script's AST that yields
 * every `tools.<server>.<tool>` reference, every import specifier, the unbounded loops, the kinds
 * of check the script declares (`checks.sum(…)` called in place on the runtime's `checks`; none
 * when the script declares its own `checks`) and the findings that need no registry.
 *
 * Guarantees: a tool is counted whether it is called or only referenced (`const f =
 * tools.a.b`), so the capability set over-approximates what the script can call; any use of
 * `tools` (or of the global object) that this walk cannot pin to a literal server and tool is a
 * critical finding rather than a silent omission. Type-only syntax is skipped: it is erased
 * before the script runs.
 *
 * Refuses to guess: it does no data-flow analysis. Aliases (`const t = tools`, `arguments[0]`,
 * the wrapper function's own parameters), computed keys (`tools[name]`), destructuring and
 * spreading of `tools` are reported, not resolved.
 *
 * Tampering: a script may not change objects it shares with Node's own code, because a changed
 * shared method runs with Node's objects as `this` (an overridden `EventEmitter.prototype.emit`
 * receives `process` when Node emits a deprecation warning). Writing, deleting or defining a
 * member of a prototype (`.prototype`, `__proto__`, `getPrototypeOf(…)`), of a builtin global or
 * of an imported module, taking a prototype as a value, and `setPrototypeOf` are critical
 * `builtin_tampering` findings. The sandbox's permission model stays the boundary; this only
 * keeps such scripts away from reviewers and from auto-approval.
 */
import ts from "typescript";
import { finding, type Finding } from "@/lib/contracts/analysis";
import { CHECK_KINDS, type CheckKind } from "@/lib/contracts/script-contract";
import {
  outermost,
  literalText,
  memberOf,
  isPrototypeAccess,
  chainOf,
  isWriteTarget,
  isNonReference,
  declaredName,
  isAlwaysTrue,
  isStringLike,
  bindsThis,
  isDynamicImport,
  canRepeat,
} from "./syntax";

/**
 * `repeated`: this site can run more than once, because it sits in a loop or in a function (a
 * callback, a recursion), or because the tool is taken as a value instead of called in place.
 */
/** `pos`/`end`: the span of `tools.<server>.<tool>` in the source. */
export type ToolReference = { capability: string; line: number; column: number; pos: number; end: number; repeated: boolean };
export type LoopSite = { line: number; column: number; start: number; end: number };
export type ImportSite = { specifier: string; line: number; column: number };

export type WalkResult = {
  toolRefs: ToolReference[];
  imports: ImportSite[];
  loops: LoopSite[];
  /** Sorted unique kinds of the checks called in place on the runtime's `checks` (lib/contracts/script-contract.ts). */
  checkKinds: CheckKind[];
  findings: Finding[];
};

const GLOBAL_OBJECTS = new Set(["globalThis", "global", "self", "window"]);
const CODE_LOADERS = new Set(["eval", "Function", "WebAssembly"]);
const TIMERS = new Set(["setTimeout", "setInterval", "setImmediate"]);
/** Globals whose objects Node's own code uses too. */
const SHARED_BUILTINS = new Set([
  "AbortController",
  "AbortSignal",
  "Array",
  "ArrayBuffer",
  "BigInt",
  "Boolean",
  "Buffer",
  "Date",
  "Error",
  "Event",
  "EventTarget",
  "Function",
  "JSON",
  "Map",
  "Math",
  "Number",
  "Object",
  "Promise",
  "Proxy",
  "Reflect",
  "RegExp",
  "Set",
  "String",
  "Symbol",
  "TextDecoder",
  "TextEncoder",
  "URL",
  "URLSearchParams",
  "Uint8Array",
  "WeakMap",
  "WeakSet",
  "console",
]);
/** Calls that change the object given first (or, for the legacy __define*__, the one they are called on). */
const DEFINING_CALLS = new Set(["defineProperty", "defineProperties", "assign", "__defineGetter__", "__defineSetter__"]);

export function walkScript(sf: ts.SourceFile): WalkResult {
  const result: WalkResult = { toolRefs: [], imports: [], loops: [], checkKinds: [], findings: [] };
  const checkKinds = new Set<CheckKind>();
  let ownChecks = false;
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

  const imported = new Set<string>();
  for (const statement of sf.statements) {
    const clause = ts.isImportDeclaration(statement) ? statement.importClause : undefined;
    if (clause?.name) imported.add(clause.name.text);
    const bindings = clause?.namedBindings;
    if (bindings && ts.isNamespaceImport(bindings)) imported.add(bindings.name.text);
    if (bindings && ts.isNamedImports(bindings)) for (const element of bindings.elements) imported.add(element.name.text);
    if (ts.isImportEqualsDeclaration(statement)) imported.add(statement.name.text);
  }
  /** Why changing what `target` reaches would change objects outside the script, or undefined. */
  const sharedTarget = (target: ts.Expression): string | undefined => {
    const { root, prototype } = chainOf(target);
    if (prototype) return "a prototype";
    if (root !== undefined && SHARED_BUILTINS.has(root)) return `the builtin ${root}`;
    if (root !== undefined && imported.has(root)) return `the imported module binding ${root}`;
    return undefined;
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
    result.toolRefs.push({
      capability: `${server.name}.${tool.name}`,
      line,
      column,
      pos: id.getStart(sf),
      end: access.end,
      repeated: !calledInPlace || canRepeat(access),
    });
  };

  const visitChecksReference = (id: ts.Identifier) => {
    const member = memberOf(outermost(id));
    const kind = member?.name;
    const access = member ? outermost(member.access) : undefined;
    const calledInPlace = access !== undefined && ts.isCallExpression(access.parent) && access.parent.expression === access;
    if (kind !== undefined && calledInPlace && (CHECK_KINDS as readonly string[]).includes(kind)) checkKinds.add(kind as CheckKind);
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

  const visitTampering = (node: ts.Node) => {
    if ((ts.isPropertyAccessExpression(node) || ts.isElementAccessExpression(node)) && isWriteTarget(outermost(node))) {
      const shared = sharedTarget(node);
      if (shared !== undefined) report("builtin_tampering", node, `changes a member of ${shared}, which code outside the script also uses`);
    } else if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
      const name = node.expression.name.text;
      const target = name.startsWith("__define") ? node.expression.expression : node.arguments[0];
      const shared = target === undefined ? undefined : sharedTarget(target);
      if (name === "setPrototypeOf") report("builtin_tampering", node, "setPrototypeOf changes an object's prototype");
      else if (DEFINING_CALLS.has(name) && shared !== undefined)
        report("builtin_tampering", node, `${name} changes ${shared}, which code outside the script also uses`);
    }
    if (isPrototypeAccess(node)) {
      const used = outermost(node);
      const call = used.parent;
      const passedToDefine = ts.isCallExpression(call) && ts.isPropertyAccessExpression(call.expression) && DEFINING_CALLS.has(call.expression.name.text);
      if (memberOf(used) === undefined && !isWriteTarget(used) && !passedToDefine) {
        report("builtin_tampering", node, "a prototype is taken as a value, so what is done to it cannot be checked; call its methods in place");
      }
    }
  };

  const visit = (node: ts.Node, thisIsGlobal: boolean): void => {
    // Type syntax is erased before the script runs. `class A extends B` keeps its expression.
    if (ts.isTypeNode(node) && !ts.isExpressionWithTypeArguments(node)) return;
    if (ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node)) return;
    if (ts.isImportDeclaration(node) && node.importClause?.isTypeOnly) return;
    visitTampering(node);

    if (ts.isIdentifier(node)) {
      if (declaredName(node) && node.text === "checks") ownChecks = true;
      if (declaredName(node) && node.text === "tools") {
        report("dynamic_tool_access", node, "the script declares its own `tools`, shadowing the runtime's");
      } else if (declaredName(node) && GLOBAL_OBJECTS.has(node.text)) {
        report("computed_global", node, `the script declares its own \`${node.text}\`, so reads from it cannot be checked`);
      } else if (!isNonReference(node)) {
        const name = node.text;
        if (name === "tools") visitToolsReference(node);
        else if (name === "checks") visitChecksReference(node);
        else if (GLOBAL_OBJECTS.has(name)) visitGlobalObject(node, name);
        else if (CODE_LOADERS.has(name)) report("eval_like", node, `${name} loads code at run time`);
        else if (name === "process") report("process_access", node, "`process` exposes the host process");
        else if (name === "require") report("require_access", node, "`require` loads modules outside the allowlist");
        else if (name === "arguments" && thisIsGlobal) {
          report(
            "dynamic_tool_access",
            node,
            "`arguments` outside a function is the runtime's own parameters (tools, inputs); call tools.<server>.<tool>(…) directly",
          );
        }
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
  result.checkKinds = ownChecks ? [] : [...checkKinds].sort();
  return result;
}
