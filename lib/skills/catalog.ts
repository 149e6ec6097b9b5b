/**
 * Skills as agents find and call them: in search_tools' answer, and inlined into scripts.
 *
 * - searchSkills(skills, query, detail): the published skills whose name or description holds
 *   every query word, and with detail "full" one declaration of them as the `skills` global a
 *   script calls (`await skills.refundInvoice({ … })`), typed from their schemas
 *   (./schema-typescript.ts). Descriptions are written into comments with `*\/` escaped.
 * - inlineSkills(code, language, skills): the script with every `skills.<name>(…)` call replaced
 *   by `(<that skill's code>)(…)`, so analysis, policy and reviewers see, and the sandbox runs,
 *   both the script and the skills it calls; and the skill versions it used.
 *
 * inlineSkills refuses (SkillUseError): a name that is not a published skill, `skills` used other
 * than as `skills.<name>(…)` (passed around, indexed, destructured), and a TypeScript skill in a
 * JavaScript script. A script that declares its own `skills` is left as it is.
 */
import ts from "typescript";
import type { PublishedSkill } from "./service";
import { schemaToTypeScript } from "./schema-typescript";

export type SkillSummary = { name: string; version: number; summary: string };
export type SkillRef = { name: string; version: number; versionId: string };

export class SkillUseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SkillUseError";
  }
}

const comment = (text: string) => text.replace(/\s+/g, " ").replaceAll("*/", "*\\/").slice(0, 300);

export function searchSkills(skills: readonly PublishedSkill[], query: string, detail: "name" | "summary" | "full") {
  const terms = query.toLowerCase().split(/\s+/).filter(Boolean);
  const found = skills.filter((s) => {
    const text = `skills.${s.name} ${s.description}`.toLowerCase();
    return terms.every((term) => text.includes(term));
  });
  const listed: SkillSummary[] = found.map((s) => ({
    name: s.name,
    version: s.version,
    summary: detail === "name" ? "" : comment(s.description).slice(0, 160),
  }));
  if (detail !== "full" || found.length === 0) return { skills: listed };
  const members = found.map(
    (s) =>
      `  /** ${comment(s.description)} (v${s.version}; or run_skill) */\n  ${s.name}(args: ${schemaToTypeScript(s.inputSchema)}): Promise<${schemaToTypeScript(s.outputSchema)}>;`,
  );
  return {
    skills: listed,
    declaration: `/** Reviewed skills: \`await skills.<name>(args)\` in a script. */\ndeclare const skills: {\n${members.join("\n")}\n};`,
  };
}

/** Whether the script names `skills` at all: the cheap test before parsing. */
export function mentionsSkills(code: string): boolean {
  return /\bskills\b/.test(code);
}

/** Whether the script declares a `skills` of its own (a variable, parameter, function, class or import). */
function declaresSkills(source: ts.SourceFile): boolean {
  let found = false;
  const visit = (node: ts.Node) => {
    const name = (node as { name?: ts.Node }).name;
    if (
      name &&
      ts.isIdentifier(name) &&
      name.text === "skills" &&
      (ts.isVariableDeclaration(node) ||
        ts.isParameter(node) ||
        ts.isFunctionDeclaration(node) ||
        ts.isClassDeclaration(node) ||
        ts.isBindingElement(node) ||
        ts.isImportSpecifier(node) ||
        ts.isNamespaceImport(node) ||
        ts.isImportClause(node))
    )
      found = true;
    if (!found) ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

export function inlineSkills(
  code: string,
  language: "typescript" | "javascript",
  skills: ReadonlyMap<string, PublishedSkill>,
): { code: string; used: SkillRef[] } {
  const source = ts.createSourceFile("script.ts", code, ts.ScriptTarget.ES2022, true, language === "typescript" ? ts.ScriptKind.TS : ts.ScriptKind.JS);
  if (declaresSkills(source)) return { code, used: [] };
  const uses: { start: number; end: number; literal: number | null; skill: PublishedSkill }[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isIdentifier(node) && node.text === "skills") {
      const parent = node.parent;
      if (ts.isPropertyAccessExpression(parent) && parent.name === node) {
        // `x.skills`: someone else's property.
      } else if (ts.isPropertyAssignment(parent) && parent.name === node) {
        // `{ skills: … }`: a key.
      } else if (
        ts.isPropertyAccessExpression(parent) &&
        parent.expression === node &&
        ts.isCallExpression(parent.parent) &&
        parent.parent.expression === parent
      ) {
        const name = parent.name.text;
        const skill = skills.get(name);
        if (!skill) throw new SkillUseError(`skills.${name} is not a published skill; search_tools lists the skills.`);
        if (skill.language === "typescript" && language === "javascript") {
          throw new SkillUseError(`skills.${name} is written in TypeScript; submit the script with language "typescript".`);
        }
        // An object literal passed in TypeScript keeps its literal types, as run_skill's arguments do (./draft.ts skillRunScript).
        const [only, ...more] = parent.parent.arguments;
        const literal = language === "typescript" && only && more.length === 0 && ts.isObjectLiteralExpression(only) ? only.end : null;
        uses.push({ start: parent.getStart(source), end: parent.end, literal, skill });
      } else {
        throw new SkillUseError("skills can only be called, as `await skills.<name>(args)`.");
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  let out = code;
  // Applied from the end of the text back, so each edit's offsets still hold.
  const edits = uses.flatMap((use) => [
    { at: use.start, end: use.end, text: `(${use.skill.code})` },
    ...(use.literal !== null ? [{ at: use.literal, end: use.literal, text: " as const" }] : []),
  ]);
  for (const edit of edits.sort((a, b) => b.at - a.at)) out = out.slice(0, edit.at) + edit.text + out.slice(edit.end);
  const used = new Map(uses.map((u) => [u.skill.id, { name: u.skill.name, version: u.skill.version, versionId: u.skill.id }]));
  return { code: out, used: [...used.values()].sort((a, b) => a.name.localeCompare(b.name)) };
}
