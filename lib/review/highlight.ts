/**
 * Syntax highlighting for the run page, using the TypeScript compiler's own scanner (a maintained
 * tokenizer Airlock already ships for analysis) instead of a regex highlighter.
 *
 * Guarantees: the output is plain data — lines of `{kind, text}` tokens whose texts, joined, are
 * the inert form of the script (lib/review/inert.ts: ANSI removed, hidden characters shown as
 * ⟦U+XXXX⟧). The page renders tokens as React text nodes; nothing here produces HTML.
 * Runs on the server only (it loads `typescript`).
 */
import ts from "typescript";
import { inertText } from "./inert";

export type TokenKind = "keyword" | "string" | "number" | "comment" | "regex" | "identifier" | "punctuation" | "text";
export type Token = { kind: TokenKind; text: string };
export type HighlightedLine = Token[];

const MAX_HIGHLIGHT_CHARS = 400_000;

function kindOf(kind: ts.SyntaxKind): TokenKind {
  if (kind >= ts.SyntaxKind.FirstKeyword && kind <= ts.SyntaxKind.LastKeyword) return "keyword";
  switch (kind) {
    case ts.SyntaxKind.StringLiteral:
    case ts.SyntaxKind.NoSubstitutionTemplateLiteral:
    case ts.SyntaxKind.TemplateHead:
    case ts.SyntaxKind.TemplateMiddle:
    case ts.SyntaxKind.TemplateTail:
      return "string";
    case ts.SyntaxKind.NumericLiteral:
    case ts.SyntaxKind.BigIntLiteral:
      return "number";
    case ts.SyntaxKind.SingleLineCommentTrivia:
    case ts.SyntaxKind.MultiLineCommentTrivia:
    case ts.SyntaxKind.ShebangTrivia:
      return "comment";
    case ts.SyntaxKind.RegularExpressionLiteral:
      return "regex";
    case ts.SyntaxKind.Identifier:
    case ts.SyntaxKind.PrivateIdentifier:
      return "identifier";
    case ts.SyntaxKind.WhitespaceTrivia:
    case ts.SyntaxKind.NewLineTrivia:
    case ts.SyntaxKind.Unknown:
      return "text";
    default:
      return "punctuation";
  }
}

/** After these tokens a `/` divides; elsewhere it starts a regular expression. */
const DIVISION_PRECEDES = new Set<ts.SyntaxKind>([
  ts.SyntaxKind.Identifier,
  ts.SyntaxKind.PrivateIdentifier,
  ts.SyntaxKind.NumericLiteral,
  ts.SyntaxKind.BigIntLiteral,
  ts.SyntaxKind.StringLiteral,
  ts.SyntaxKind.NoSubstitutionTemplateLiteral,
  ts.SyntaxKind.TemplateTail,
  ts.SyntaxKind.RegularExpressionLiteral,
  ts.SyntaxKind.CloseParenToken,
  ts.SyntaxKind.CloseBracketToken,
  ts.SyntaxKind.CloseBraceToken,
  ts.SyntaxKind.PlusPlusToken,
  ts.SyntaxKind.MinusMinusToken,
  ts.SyntaxKind.ThisKeyword,
  ts.SyntaxKind.SuperKeyword,
  ts.SyntaxKind.TrueKeyword,
  ts.SyntaxKind.FalseKeyword,
  ts.SyntaxKind.NullKeyword,
]);

function tokenize(code: string): Token[] {
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, false, ts.LanguageVariant.Standard, code);
  const tokens: Token[] = [];
  // Brace depths at which an open template literal resumes (`${ … }`).
  const templateDepths: number[] = [];
  let depth = 0;
  let previous: ts.SyntaxKind = ts.SyntaxKind.Unknown;
  for (let kind = scanner.scan(); kind !== ts.SyntaxKind.EndOfFileToken; kind = scanner.scan()) {
    if ((kind === ts.SyntaxKind.SlashToken || kind === ts.SyntaxKind.SlashEqualsToken) && !DIVISION_PRECEDES.has(previous)) {
      kind = scanner.reScanSlashToken();
    }
    if (kind === ts.SyntaxKind.OpenBraceToken) depth++;
    if (kind === ts.SyntaxKind.CloseBraceToken) {
      if (templateDepths.length > 0 && templateDepths[templateDepths.length - 1] === depth) {
        templateDepths.pop();
        kind = scanner.reScanTemplateToken(false);
      } else {
        depth--;
      }
    }
    if (kind === ts.SyntaxKind.TemplateHead || kind === ts.SyntaxKind.TemplateMiddle) templateDepths.push(depth);
    tokens.push({ kind: kindOf(kind), text: scanner.getTokenText() });
    if (kind !== ts.SyntaxKind.WhitespaceTrivia && kind !== ts.SyntaxKind.NewLineTrivia && kindOf(kind) !== "comment") previous = kind;
  }
  return tokens;
}

/** Highlighted lines of a script (1 entry per line of `code`). Falls back to plain text if huge. */
export function highlight(code: string): HighlightedLine[] {
  const tokens: Token[] = code.length > MAX_HIGHLIGHT_CHARS ? [{ kind: "text", text: code }] : tokenize(code);
  const lines: HighlightedLine[] = [[]];
  for (const token of tokens) {
    const parts = token.text.split(/\r\n|\r|\n/);
    parts.forEach((part, index) => {
      if (index > 0) lines.push([]);
      if (part) lines[lines.length - 1]!.push({ kind: token.kind, text: inertText(part) });
    });
  }
  return lines;
}
