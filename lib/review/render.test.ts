/**
 * The pure pieces of the run page: inert text, hidden-character markers, JavaScript's lines, the
 * highlighter and the line diff — and the marker elements as the console renders them.
 */
import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { CodeView, DiffView } from "@/components/run/code-view";
import { Inert } from "@/components/ui/inert";
import { analyzeScript } from "@/lib/intake/analyze";
import { diffLines } from "@/lib/untrusted/diff";
import { highlight } from "./highlight";
import { hasHiddenCharacters, inertCode, inertJson, inertText } from "@/lib/untrusted/inert";
import { segments, segmentText, splitJsLines } from "@/lib/untrusted/invisible";

/** The Trojan-source refund: the page must not show the assignment inside the comment. */
const TROJAN = "let amountMinor = 1; // one cent, goodwill\u2028amountMinor = 250000;";

/** Every character the brief names, one of them astral (a surrogate pair). */
const HIDDEN = [
  ["\u2028", "U+2028"],
  ["\u2029", "U+2029"],
  ["\u00ad", "U+00AD"],
  ["\u034f", "U+034F"],
  ["\u115f", "U+115F"],
  ["\u3164", "U+3164"],
  ["\uffa0", "U+FFA0"],
  ["\u180e", "U+180E"],
  ["\u{e0041}", "U+E0041"],
  ["\u001b", "U+001B"],
  ["\u202e", "U+202E"],
  ["\u200b", "U+200B"],
  ["\ufeff", "U+FEFF"],
  ["\u0007", "U+0007"],
] as const;

const markers = (text: string) => segments(text).flatMap((s) => (s.kind === "marker" ? [s.label] : []));
const html = (text: string) => renderToStaticMarkup(createElement(Inert, { text }));

describe("inertText", () => {
  it("strips ANSI escape sequences and keeps every hidden character for the markers", () => {
    expect(inertText("\u001b[31mred\u001b[0m")).toBe("red");
    expect(inertText("\u001b]0;title\u0007ok")).toBe("ok");
    expect(inertText("if (isAdmin\u202e\u2066) {")).toBe("if (isAdmin\u202e\u2066) {");
    expect(inertText("line\nnext\ttab\u0007")).toBe("line\nnext\ttab\u0007");
    expect(hasHiddenCharacters("plain\r\nwindows\tline")).toBe(false);
    expect(hasHiddenCharacters("x\u2067")).toBe(true);
    expect(hasHiddenCharacters(TROJAN)).toBe(true);
  });

  it("caps long text without splitting a surrogate pair, and renders JSON with its hidden characters", () => {
    expect(inertText("x".repeat(20), 5)).toMatch(/^xxxxx… \(15 more characters not shown\)$/);
    expect(inertText(`abcd\u{e0041}z`, 5)).toBe("abcd… (3 more characters not shown)");
    expect(inertJson({ a: "\u202e<script>\u2028" })).toContain('"\u202e<script>\u2028"');
  });

  it("leaves code as it runs: ESC is kept (to be marked), not stripped", () => {
    expect(inertCode("console.log('\u001b[2J')")).toBe("console.log('\u001b[2J')");
  });
});

describe("hidden-character markers", () => {
  it.each(HIDDEN)("marks %j as %s, one marker per code point", (char, label) => {
    const text = `a${char}b${char}`;
    expect(markers(text)).toEqual([label, label]);
    expect(segments(text).map(segmentText).join("")).toBe(text);
    const markup = html(text);
    expect(markup.match(/<span data-invisible="[^"]+"/g)).toEqual([`<span data-invisible="${label}"`, `<span data-invisible="${label}"`]);
    // The hidden character itself never reaches the page.
    expect(markup).not.toContain(char);
  });

  it("leaves newline, tab and a Windows line end alone, but marks a lone CR", () => {
    expect(markers("a\nb\tc\r\nd")).toEqual([]);
    expect(markers("a\rb")).toEqual(["U+000D"]);
  });

  it("names what it marks", () => {
    const [, marker] = segments("x\u2028");
    expect(marker).toEqual({ kind: "marker", codePoint: 0x2028, label: "U+2028", name: "LINE SEPARATOR" });
    expect(html("\u{e0041}")).toContain('title="U+E0041 TAG LATIN CAPITAL LETTER A');
  });

  it("renders literal marker-like text as plain text, never as a marker element", () => {
    for (const forged of ["⟦U+2028⟧", "U+2028", '<span data-invisible="U+2028">U+2028</span>']) {
      expect(segments(forged)).toEqual([{ kind: "text", text: forged }]);
      expect(html(forged)).not.toMatch(/<span/);
    }
    // A real one next to a forged one: exactly one element.
    expect(html("⟦U+2028⟧\u2028").match(/data-invisible/g)).toHaveLength(1);
  });
});

describe("splitJsLines", () => {
  it("ends lines where JavaScript does: \\n, \\r\\n, \\r, U+2028 and U+2029, keeping the hidden ones visible", () => {
    expect(splitJsLines(TROJAN)).toEqual(["let amountMinor = 1; // one cent, goodwill\u2028", "amountMinor = 250000;"]);
    expect(splitJsLines("a\nb\r\nc\rd\u2029e")).toEqual(["a", "b", "c\r", "d\u2029", "e"]);
    expect(splitJsLines("")).toEqual([""]);
    expect(splitJsLines("a\n")).toEqual(["a", ""]);
  });
});

describe("highlight", () => {
  it("keeps the text, one entry per line, with keywords, strings, comments and regexes classified", () => {
    const code = "const s = `a ${b}`; // note\nif (x / 2) y = /re+/g;\n/* two\nlines */";
    const lines = highlight(code);
    expect(lines.map((tokens) => tokens.map((t) => t.text).join(""))).toEqual(code.split("\n"));
    const kinds = (i: number) => Object.fromEntries(lines[i]!.map((t) => [t.text, t.kind]));
    expect(kinds(0)).toMatchObject({ const: "keyword", "`a ${": "string", "// note": "comment" });
    expect(kinds(1)).toMatchObject({ "/": "punctuation", "/re+/g": "regex" });
    expect(kinds(3)).toMatchObject({ "lines */": "comment" });
  });

  it("keeps hidden characters inside tokens, ESC included", () => {
    expect(
      highlight('"\u202e"')[0]!
        .map((t) => t.text)
        .join(""),
    ).toBe('"\u202e"');
    expect(
      highlight("log('\u001b[31m')")[0]!
        .map((t) => t.text)
        .join(""),
    ).toBe("log('\u001b[31m')");
  });

  it("puts the code after a U+2028 on its own line 2, outside the comment, with the separator ending line 1", () => {
    const lines = highlight(TROJAN);
    expect(lines).toHaveLength(2);
    expect(lines[0]!.at(-2)).toEqual({ kind: "comment", text: "// one cent, goodwill" });
    expect(lines[0]!.at(-1)).toEqual({ kind: "text", text: "\u2028" });
    expect(lines[1]!.map((t) => t.text).join("")).toBe("amountMinor = 250000;");
    expect(lines[1]!.find((t) => t.text === "amountMinor")).toEqual({ kind: "identifier", text: "amountMinor" });
    expect(lines[1]!.some((t) => t.kind === "comment")).toBe(false);
  });

  it("drops no character: tokens are the script, on splitJsLines' lines", () => {
    const code = 'a = 1;\u2029b = "x\u2028y"; // c\r\nd\re\u{e0041}\u00ad;\n`t\u2028${u}`';
    const lines = highlight(code);
    expect(lines.map((tokens) => tokens.map((t) => t.text).join(""))).toEqual(splitJsLines(code));
  });

  it("agrees with analysis: each finding's line and column point at its character on the displayed line", () => {
    const code = `${TROJAN}\u2029const c = ({}).constructor;\r\nconst s = "\u{e0041}\u00ad";\rconst t\u043etal = 1;`;
    const lines = highlight(code).map((tokens) => tokens.map((t) => t.text).join(""));
    const { findings } = analyzeScript({ code, language: "javascript", tools: [], declarations: "", allowedPackages: [] });
    const located = findings.map((f) => [f.code, f.line, [...lines[f.line - 1]!.slice(f.column - 1)][0]]);
    expect(located).toEqual([
      ["invisible_character", 1, "\u2028"],
      ["invisible_character", 2, "\u2029"],
      ["constructor_access", 3, "("],
      ["invisible_character", 4, "\u{e0041}"],
      ["invisible_character", 4, "\u00ad"],
      ["invisible_character", 4, "\r"],
      ["confusable_identifier", 5, "t"],
    ]);
  });

  it("renders line 2 of the Trojan script as its own numbered row, with a marker where line 1 ends", () => {
    const markup = renderToStaticMarkup(createElement(CodeView, { lines: highlight(TROJAN), findingsByLine: {}, label: "Script" }));
    const rows = [...markup.matchAll(/<tr data-line="(\d+)"[^>]*>(.*?)<\/tr>/g)].map((m) => [m[1], m[2]!.replace(/<[^>]+>/g, "")]);
    expect(rows).toEqual([
      ["1", "1line 1: let amountMinor = 1; // one cent, goodwillU+2028"],
      ["2", "2line 2: amountMinor = 250000;"],
    ]);
    expect(markup).toContain('<span data-invisible="U+2028"');
    expect(markup).not.toContain("\u2028");
  });
});

describe("diffLines", () => {
  it("marks removed and added lines against the previous attempt", () => {
    const diff = diffLines("a\nb\nc", "a\nB\nc\nd");
    expect(diff.lines.map((l) => `${l.kind}:${l.text}`)).toEqual(["same:a", "removed:b", "added:B", "same:c", "added:d"]);
    expect(diff).toMatchObject({ added: 2, removed: 1, tooLarge: false });
    expect(diffLines("same", "same")).toMatchObject({ added: 0, removed: 0 });
  });

  it("compares JavaScript's lines, so a U+2028 that hides a new line shows up as one, with its marker", () => {
    const before = "let amountMinor = 1; // one cent, goodwill";
    const diff = diffLines(before, TROJAN);
    expect(diff.lines.map((l) => `${l.kind}:${l.newLine ?? "-"}:${l.text}`)).toEqual([
      `removed:-:${before}`,
      `added:1:${before}\u2028`,
      "added:2:amountMinor = 250000;",
    ]);
    const markup = renderToStaticMarkup(createElement(DiffView, { diff }));
    expect(markup.match(/data-invisible="U\+2028"/g)).toHaveLength(1);
  });
});
