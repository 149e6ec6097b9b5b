/** The pure pieces of the run page: inert text, the highlighter and the line diff. */
import { describe, expect, it } from "vitest";
import { diffLines } from "./diff";
import { highlight } from "./highlight";
import { hasHiddenCharacters, inertJson, inertText } from "./inert";

describe("inertText", () => {
  it("strips ANSI escapes and shows bidi and zero-width characters as markers", () => {
    expect(inertText("\u001b[31mred\u001b[0m")).toBe("red");
    expect(inertText("\u001b]0;title\u0007ok")).toBe("ok");
    expect(inertText("if (isAdmin\u202e\u2066) {")).toBe("if (isAdmin⟦U+202E⟧⟦U+2066⟧) {");
    expect(inertText("a\u200bb\u200e\u200f")).toBe("a⟦U+200B⟧b⟦U+200E⟧⟦U+200F⟧");
    expect(inertText("line\nnext\ttab\u0007")).toBe("line\nnext\ttab⟦U+0007⟧");
    expect(hasHiddenCharacters("plain")).toBe(false);
    expect(hasHiddenCharacters("x\u2067")).toBe(true);
  });

  it("caps long text and renders JSON inertly", () => {
    expect(inertText("x".repeat(20), 5)).toMatch(/^xxxxx… \(15 more characters not shown\)$/);
    expect(inertJson({ a: "\u202e<script>" })).toContain('"⟦U+202E⟧<script>"');
  });
});

describe("highlight", () => {
  it("keeps the text, one entry per line, with keywords, strings, comments and regexes classified", () => {
    const code = 'const s = `a ${b}`; // note\nif (x / 2) y = /re+/g;\n/* two\nlines */';
    const lines = highlight(code);
    expect(lines.map((tokens) => tokens.map((t) => t.text).join(""))).toEqual(code.split("\n"));
    const kinds = (i: number) => Object.fromEntries(lines[i]!.map((t) => [t.text, t.kind]));
    expect(kinds(0)).toMatchObject({ const: "keyword", "`a ${": "string", "// note": "comment" });
    expect(kinds(1)).toMatchObject({ "/": "punctuation", "/re+/g": "regex" });
    expect(kinds(3)).toMatchObject({ "lines */": "comment" });
  });

  it("shows hidden characters inside tokens", () => {
    expect(highlight('"\u202e"')[0]!.map((t) => t.text).join("")).toBe('"⟦U+202E⟧"');
  });
});

describe("diffLines", () => {
  it("marks removed and added lines against the previous attempt", () => {
    const diff = diffLines("a\nb\nc", "a\nB\nc\nd");
    expect(diff.lines.map((l) => `${l.kind}:${l.text}`)).toEqual(["same:a", "removed:b", "added:B", "same:c", "added:d"]);
    expect(diff).toMatchObject({ added: 2, removed: 1, tooLarge: false });
    expect(diffLines("same", "same")).toMatchObject({ added: 0, removed: 0 });
  });
});
