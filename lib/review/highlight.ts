/**
 * Syntax highlighting for the run page, using the TypeScript compiler's own scanner (a maintained
 * tokenizer Airlock already ships for analysis) instead of a regex highlighter.
 *
 * Guarantees: the output is plain data — lines of `{kind, text}` tokens whose texts are exactly
 * the script's characters, none dropped or altered (ESC and every other hidden character stay, for
 * the page to render as marker elements through components/ui/inert.tsx; nothing here produces
 * HTML). Lines are JavaScript's lines (lib/untrusted/invisible.ts splitJsLines): line N here is line N
 * of analysis findings, and a line ended by U+2028, U+2029 or a lone "\r" ends with that
 * character, so its marker shows where the hidden line break is. The TypeScript scanner skips
 * U+2028/U+2029 without a token; the text between tokens is filled in from the script, so the
 * tokens, joined with the dropped "\n"/"\r\n", are the script.
 * Runs on the server only (it loads `typescript`).
 */
import ts from "typescript";
import { JS_LINE_TERMINATOR } from "@/lib/untrusted/invisible";

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
  // End of the text covered so far; anything the scanner skipped is kept as plain text.
  let covered = 0;
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
    const start = scanner.getTokenStart();
    if (start > covered) tokens.push({ kind: "text", text: code.slice(covered, start) });
    const from = Math.max(start, covered);
    const end = scanner.getTokenEnd();
    if (end > from) tokens.push({ kind: kindOf(kind), text: code.slice(from, end) });
    covered = Math.max(covered, end);
    if (kind !== ts.SyntaxKind.WhitespaceTrivia && kind !== ts.SyntaxKind.NewLineTrivia && kindOf(kind) !== "comment") previous = kind;
  }
  if (covered < code.length) tokens.push({ kind: "text", text: code.slice(covered) });
  return tokens;
}

/**
 * Highlighted lines of a script, one entry per JavaScript line of `code` (as splitJsLines counts
 * them). Falls back to plain text if huge.
 */
export function highlight(code: string): HighlightedLine[] {
  const tokens: Token[] = code.length > MAX_HIGHLIGHT_CHARS ? [{ kind: "text", text: code }] : tokenize(code);
  const lines: HighlightedLine[] = [[]];
  const push = (kind: TokenKind, text: string) => {
    if (text) lines[lines.length - 1]!.push({ kind, text });
  };
  // A "\r\n" never straddles two tokens: the scanner reads it as one newline.
  for (const token of tokens) {
    let from = 0;
    for (const match of token.text.matchAll(JS_LINE_TERMINATOR)) {
      push(token.kind, token.text.slice(from, match.index));
      // U+2028, U+2029 and a lone "\r" stay visible at the end of the line they end.
      if (match[0] !== "\n" && match[0] !== "\r\n") push("text", match[0]);
      lines.push([]);
      from = match.index + match[0].length;
    }
    push(token.kind, token.text.slice(from));
  }
  return lines;
}
