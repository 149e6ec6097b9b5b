/**
 * Media types from bytes, the hostile-content headers and the previews, on hostile inputs: an
 * HTML file named like an image is not an image, an SVG is recognised only by its root element, a
 * name cannot break out of Content-Disposition, and a preview holds only capped inert text.
 */
import { describe, expect, it } from "vitest";
import { artifactUrl, contentDisposition, hostileContentHeaders, imageContentType, isArtifactName, isArtifactPath, sniffMediaType } from "./artifacts-media";
import {
  artifactPreview,
  csvPreview,
  jsonPreview,
  TABLE_MAX_COLUMNS,
  TABLE_MAX_ROWS,
  TREE_MAX_DEPTH,
  TREE_MAX_NODES,
  type TreeNode,
} from "./artifacts-preview";

const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==", "base64");
const bytes = (text: string) => Buffer.from(text, "utf8");

describe("sniffMediaType", () => {
  it("decides by the bytes: an image needs its signature or its root element, whatever the name", () => {
    const cases: [string, Buffer, string][] = [
      ["chart.png", PNG, "image/png"],
      ["chart.bin", PNG, "image/png"],
      ["x.png", bytes("<html><script>alert(1)</script></html>"), "text/plain"],
      ["x.png", Buffer.concat([PNG.subarray(0, 8), bytes("<script>alert(1)</script>")]), "application/octet-stream"],
      ["evil.html", bytes("<script>alert(1)</script>"), "text/plain"],
      ["a.svg", bytes('<svg xmlns="http://www.w3.org/2000/svg"/>'), "image/svg+xml"],
      [
        "a.svg",
        bytes('\uFEFF<?xml version="1.0"?>\n<!-- made by a script -->\n<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "x.dtd">\n<svg>'),
        "image/svg+xml",
      ],
      ["image.txt", bytes("<svg onload=alert(1)><script>alert(2)</script></svg>"), "image/svg+xml"],
      ["a.svg", bytes('<!DOCTYPE svg [<!ENTITY x "y">]><svg/>'), "text/plain"],
      ["a.svg", bytes("<html><svg/></html>"), "text/plain"],
      ["a.svg", bytes("<svgx/>"), "text/plain"],
      ["d.json", bytes('{"a":[1,2]}'), "application/json"],
      ["d.txt", bytes(" [1, 2]\n"), "application/json"],
      ["d.json", bytes("42"), "text/plain"],
      ["d.json", bytes("{broken"), "text/plain"],
      ["r.csv", bytes("a,b\n1,2\n"), "text/csv"],
      ["R.CSV", bytes("a,b\n"), "text/csv"],
      ["r.csv", Buffer.from([0x61, 0x00, 0x62]), "application/octet-stream"],
      ["r.csv", Buffer.from([0xff, 0xfe, 0x61]), "application/octet-stream"],
      ["notes", bytes("hello"), "text/plain"],
      ["empty", Buffer.alloc(0), "text/plain"],
    ];
    for (const [name, content, type] of cases) expect(sniffMediaType(name, content), `${name}: ${content.toString("latin1").slice(0, 40)}`).toBe(type);
  });

  it("imageContentType answers only for a real PNG or SVG", () => {
    expect(imageContentType("x.png", PNG)).toBe("image/png");
    expect(imageContentType("x.svg", bytes("<svg/>"))).toBe("image/svg+xml");
    expect(imageContentType("x.png", bytes("<html>"))).toBeNull();
    expect(imageContentType("x.json", bytes("{}"))).toBeNull();
  });
});

describe("names, URLs and headers", () => {
  it("accepts the sandbox's names only", () => {
    for (const ok of ["report.csv", "sub/dir/chart.svg", ".hidden", "a-b_c.d"]) expect(isArtifactName(ok), ok).toBe(true);
    for (const bad of ["", "..", "../x", "a/../b", "a/./b", "/abs", "a//b", "a/", "é.csv", "a b", "a\u202Eb", "a\\b", "x".repeat(513)]) {
      expect(isArtifactName(bad), bad).toBe(false);
    }
  });

  it("Content-Disposition is always attachment, with an ASCII fallback and every other byte percent-encoded", () => {
    expect(contentDisposition("sub/report.csv")).toBe(`attachment; filename="report.csv"; filename*=UTF-8''report.csv`);
    // Names never carry these (the sandbox refuses them), but the encoder holds for any string.
    expect(contentDisposition(`a"; filename=evil.html\r\nX-Injected: 1`)).toBe(
      `attachment; filename="a___filename_evil.html__X-Injected__1"; filename*=UTF-8''a%22%3B%20filename%3Devil.html%0D%0AX-Injected%3A%201`,
    );
    expect(contentDisposition("r\u00e9sum\u00e9\u202E.csv")).toBe(`attachment; filename="r_sum__.csv"; filename*=UTF-8''r%C3%A9sum%C3%A9%E2%80%AE.csv`);
    expect(contentDisposition("it's (1)*.txt")).toContain(`filename*=UTF-8''it%27s%20%281%29%2A.txt`);
  });

  it("every artifact response is sandboxed, unsniffable, an attachment, same-origin and uncached", () => {
    const headers = hostileContentHeaders({ name: "evil.html", sha256: "ab".repeat(32), sizeBytes: 10 }, "application/octet-stream");
    expect(headers).toMatchObject({
      "content-type": "application/octet-stream",
      "content-length": "10",
      "content-disposition": `attachment; filename="evil.html"; filename*=UTF-8''evil.html`,
      "content-security-policy": "sandbox; default-src 'none'",
      "x-content-type-options": "nosniff",
      "cross-origin-resource-policy": "same-origin",
      "cache-control": "private, no-store",
    });
  });

  it("URLs encode each segment, and the proxy's test catches every spelling of the path", () => {
    expect(artifactUrl("6f1c0c52-0000-4000-8000-000000000000", "sub/chart.svg", "image")).toBe(
      "/api/runs/6f1c0c52-0000-4000-8000-000000000000/artifact-images/sub/chart.svg",
    );
    expect(artifactUrl("r", "a.csv", "download")).toBe("/api/runs/r/artifacts/a.csv");
    for (const path of ["/api/runs/r/artifacts/a.csv", "/API/Runs/r/artifact-images/x.svg", "/%61pi/runs/r/artifacts/x", "//api/runs/r/artifacts/x"]) {
      expect(isArtifactPath(path), path).toBe(true);
    }
    for (const path of ["/runs/r", "/api/audit/export", "/api/runsx/r"]) expect(isArtifactPath(path), path).toBe(false);
  });
});

describe("previews", () => {
  it("a CSV becomes a capped table of inert text: markup and formulas are just text", () => {
    const preview = csvPreview(bytes('name,note\n<b>alice</b>,=HYPERLINK("http://x")\n"multi\nline","\u001b[31mred"\n'));
    expect(preview).toEqual({
      kind: "table",
      header: ["name", "note"],
      rows: [
        ["<b>alice</b>", '=HYPERLINK("http://x")'],
        ["multi\nline", "red"],
      ],
      truncated: false,
    });
    const wide = Array.from({ length: TABLE_MAX_COLUMNS + 5 }, (_, i) => `c${i}`).join(",");
    const long = [wide, ...Array.from({ length: TABLE_MAX_ROWS + 50 }, (_, i) => String(i))].join("\n");
    const capped = csvPreview(bytes(long));
    expect(capped.kind === "table" && [capped.header.length, capped.rows.length, capped.truncated]).toEqual([TABLE_MAX_COLUMNS, TABLE_MAX_ROWS, true]);
    expect(csvPreview(bytes('a,"unclosed\n'))).toMatchObject({ kind: "none" });
  });

  it("JSON becomes a tree capped in depth and nodes, its keys and strings inert", () => {
    const preview = jsonPreview(bytes('{"<img src=x onerror=alert(1)>": "<script>alert(1)</script>", "n": [1, true, null]}'));
    expect(preview).toEqual({
      kind: "tree",
      truncated: false,
      root: {
        key: null,
        type: "object",
        children: [
          { key: "<img src=x onerror=alert(1)>", type: "string", value: "<script>alert(1)</script>" },
          {
            key: "n",
            type: "array",
            children: [
              { key: "0", type: "number", value: "1" },
              { key: "1", type: "boolean", value: "true" },
              { key: "2", type: "null", value: "null" },
            ],
          },
        ],
      },
    });
    const deep = jsonPreview(bytes("[".repeat(100) + "]".repeat(100)));
    let node = deep.kind === "tree" ? deep.root : null;
    let depth = 0;
    while (node?.children?.length) [node, depth] = [node.children[0]!, depth + 1];
    expect([depth, node?.hidden, deep.kind === "tree" && deep.truncated]).toEqual([TREE_MAX_DEPTH, 1, true]);
    const wide = jsonPreview(bytes(JSON.stringify(Array.from({ length: 5000 }, (_, i) => i))));
    const count = (n: TreeNode): number => 1 + (n.children ?? []).reduce((sum, child) => sum + count(child), 0);
    expect(wide.kind === "tree" && [count(wide.root), wide.root.hidden]).toEqual([TREE_MAX_NODES, 5000 - (TREE_MAX_NODES - 1)]);
    expect(jsonPreview(bytes("{nope"))).toMatchObject({ kind: "none" });
  });

  it("images are previewed by reference only; purged, oversized and other files get none", () => {
    expect(artifactPreview({ mediaType: "image/svg+xml", sizeBytes: 10 }, null, false)).toEqual({ kind: "image" });
    expect(artifactPreview({ mediaType: "image/png", sizeBytes: 10 }, null, true)).toMatchObject({ kind: "none", reason: expect.stringMatching(/purged/) });
    expect(artifactPreview({ mediaType: "text/csv", sizeBytes: 2 * 1024 * 1024 }, null, false)).toMatchObject({ kind: "none" });
    expect(artifactPreview({ mediaType: "text/plain", sizeBytes: 5 }, bytes("hello"), false)).toMatchObject({ kind: "none" });
    expect(artifactPreview({ mediaType: "text/csv", sizeBytes: 4 }, bytes("a,b\n"), false)).toMatchObject({ kind: "table", header: ["a", "b"] });
  });
});
