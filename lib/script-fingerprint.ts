/**
 * A script's structural fingerprint: what stays the same when an agent runs "the same script"
 * again with other values. Runs with one fingerprint form a pattern (lib/review/patterns.ts), the
 * candidates for a reviewed skill.
 *
 * fingerprintScript(code, language, capabilitySet) walks the script's tokens in source order
 * (TypeScript's parser; comments and layout do not count) and writes each one normalized:
 * - a name the script declares (variable, parameter, function, class, catch binding) becomes
 *   v1, v2, … in order of first appearance, so renaming a variable changes nothing;
 * - a literal value becomes a typed hole ($string, $number, $bigint, $boolean, the parts of a
 *   template), recorded in `holes` with its value in order: the parameters that vary (a U+0000 or
 *   lone surrogate a literal spells with an escape is stored as U+FFFD);
 * - what names things outside the script's own choice stays as written: property names
 *   (`x.name`, `{ key: … }`, `x["key"]`), globals (`tools`, `inputs`, `Math`), keywords,
 *   operators, import specifiers, regular expressions.
 * The fingerprint is the sha256 of that text together with the language and the sorted
 * capability set, so two scripts calling different tools never share one.
 *
 * holeSites(code, language) gives the same holes with where each sits in the text (a template
 * part's own text, without its delimiters) and its token, for binding holes to a skill's arguments
 * (lib/skills/draft.ts).
 *
 * Pure and total: a script that does not parse still gets a fingerprint (of the tokens the parser
 * recovered), and one nested deeper than the parser's stack gets the fingerprint of its whole
 * text, with no holes; the cost is linear in the script's size.
 */
import ts from "typescript";
import { canonicalJson } from "@/lib/canonical-json";
import { sha256Hex } from "@/lib/digest";
import { normalizeText } from "@/lib/untrusted/storable-text";

/** Bumped when normalization changes, so fingerprints of different versions never match. */
export const FINGERPRINT_VERSION = 1;

export type HoleType = "string" | "number" | "bigint" | "boolean";
export type Hole = { type: HoleType; value: string };
export type ScriptFingerprint = { fingerprint: string; holes: Hole[] };
/** A hole and the text it came from: code.slice(start, end) is the literal (a template part's text). */
export type HoleSite = Hole & { start: number; end: number; node: ts.Node };

const DECLARING = new Set([
  ts.SyntaxKind.VariableDeclaration,
  ts.SyntaxKind.Parameter,
  ts.SyntaxKind.FunctionDeclaration,
  ts.SyntaxKind.FunctionExpression,
  ts.SyntaxKind.ClassDeclaration,
  ts.SyntaxKind.ClassExpression,
  ts.SyntaxKind.BindingElement,
  ts.SyntaxKind.ImportSpecifier,
  ts.SyntaxKind.ImportClause,
  ts.SyntaxKind.NamespaceImport,
]);

/** The names the script declares itself. */
function declaredNames(source: ts.SourceFile): Set<string> {
  const names = new Set<string>();
  const visit = (node: ts.Node) => {
    const name = (node as { name?: ts.Node }).name;
    if (DECLARING.has(node.kind) && name && ts.isIdentifier(name)) names.add(name.text);
    if (ts.isCatchClause(node) && node.variableDeclaration && ts.isIdentifier(node.variableDeclaration.name)) names.add(node.variableDeclaration.name.text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return names;
}

/** A name chosen by whoever defined the thing it names (a property, a key), not by this script. */
function isPropertyName(node: ts.Identifier | ts.StringLiteral | ts.NoSubstitutionTemplateLiteral): boolean {
  const parent = node.parent;
  if (ts.isPropertyAccessExpression(parent) && parent.name === node) return true;
  if (ts.isElementAccessExpression(parent) && parent.argumentExpression === node) return true;
  if ((ts.isPropertyAssignment(parent) || ts.isMethodDeclaration(parent) || ts.isPropertyDeclaration(parent)) && parent.name === node) return true;
  if (ts.isShorthandPropertyAssignment(parent) || ts.isPropertySignature(parent)) return true;
  if (ts.isBindingElement(parent) && parent.propertyName === node) return true;
  return false;
}

export function fingerprintScript(code: string, language: string, capabilitySet: readonly string[]): ScriptFingerprint {
  const capabilities = [...new Set(capabilitySet)].sort();
  try {
    const { fingerprint, holes } = normalized(code, language, capabilities);
    return { fingerprint, holes };
  } catch {
    // Nesting deeper than the parser's stack (analysis denies such a script): the whole text is its shape.
    return { fingerprint: sha256Hex(canonicalJson({ v: FINGERPRINT_VERSION, language, code, capabilities })), holes: [] };
  }
}

/** The holes of a script in order, where they sit; empty for a script nested deeper than the parser's stack. */
export function holeSites(code: string, language: string): HoleSite[] {
  try {
    return normalized(code, language, []).sites;
  } catch {
    return [];
  }
}

function normalized(code: string, language: string, capabilities: string[]): ScriptFingerprint & { sites: HoleSite[] } {
  const kind = language === "typescript" ? ts.ScriptKind.TS : ts.ScriptKind.JS;
  const source = ts.createSourceFile("script.ts", code, ts.ScriptTarget.ES2022, true, kind);
  const declared = declaredNames(source);
  const renamed = new Map<string, string>();
  const holes: Hole[] = [];
  const sites: HoleSite[] = [];
  const out: string[] = [];
  const hole = (type: HoleType, value: string, node: ts.Node, inner: [number, number] = [0, 0]) => {
    // A literal can spell U+0000 or a lone surrogate with an escape; stored, they become U+FFFD.
    const kept = { type, value: normalizeText(value).value };
    holes.push(kept);
    sites.push({ ...kept, start: node.getStart(source) + inner[0], end: node.end - inner[1], node });
    out.push(`$${type}`);
  };
  const visit = (node: ts.Node) => {
    const children = node.getChildren(source);
    if (children.length > 0) {
      for (const child of children) visit(child);
      return;
    }
    if (ts.isIdentifier(node)) {
      if (!isPropertyName(node) && declared.has(node.text)) {
        if (!renamed.has(node.text)) renamed.set(node.text, `v${renamed.size + 1}`);
        out.push(renamed.get(node.text)!);
      } else out.push(node.text);
    } else if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
      const fixed =
        isPropertyName(node) || ts.isImportDeclaration(node.parent) || ts.isExportDeclaration(node.parent) || ts.isExternalModuleReference(node.parent);
      if (fixed) out.push(JSON.stringify(node.text));
      else hole("string", node.text, node);
    } else if (ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) {
      // "`…${", "}…${", "}…`": the part's own text lies between its delimiters.
      hole("string", node.text, node, [1, ts.isTemplateTail(node) ? 1 : 2]);
    } else if (ts.isNumericLiteral(node)) {
      hole("number", node.text, node);
    } else if (ts.isBigIntLiteral(node)) {
      hole("bigint", node.text, node);
    } else if (node.kind === ts.SyntaxKind.TrueKeyword || node.kind === ts.SyntaxKind.FalseKeyword) {
      hole("boolean", node.getText(source), node);
    } else if (node.kind !== ts.SyntaxKind.EndOfFileToken) {
      out.push(node.getText(source));
    }
  };
  visit(source);
  const fingerprint = sha256Hex(canonicalJson({ v: FINGERPRINT_VERSION, language, tokens: out.join(" "), capabilities }));
  return { fingerprint, holes, sites };
}
