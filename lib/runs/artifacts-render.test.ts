/**
 * The run page's artifact section as the server renders it (components/run/artifacts.tsx from
 * lib/review/run-sections.ts artifactItems): a hostile script's markup is only ever text, an SVG
 * only ever the `src` of an `<img>`, and an HTML file named x.png gets no `<img>` at all.
 */
import { createHash } from "node:crypto";
import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { Artifacts } from "@/components/run/artifacts";
import { artifactItems } from "@/lib/review/run-sections";
import type { LoadedArtifact } from "./artifacts";
import { sniffMediaType } from "./artifacts-media";

const RUN = "6f1c0c52-0000-4000-8000-000000000001";
const FILES: Record<string, string> = {
  "report.csv": 'name,note\n<b>alice</b>,<img src=x onerror="alert(1)">\n',
  "data.json": '{"<script>alert(1)</script>": "</pre><script>alert(2)</script>"}',
  "evil.svg": '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(3)"><script>alert(4)</script></svg>',
  "x.png": "<html><script>alert(5)</script></html>",
  "evil.html": "<script>alert(6)</script>",
};

function loaded(name: string, purgedAt: Date | null = null): LoadedArtifact {
  const bytes = Buffer.from(FILES[name]!);
  const mediaType = sniffMediaType(name, bytes);
  return {
    name,
    sizeBytes: bytes.length,
    sha256: createHash("sha256").update(bytes).digest("hex"),
    mediaType,
    purgedAt,
    bytes: purgedAt || !["text/csv", "application/json"].includes(mediaType) ? null : bytes,
  };
}

function render(stored: LoadedArtifact[]): string {
  const sealed = stored.map(({ name, sizeBytes, sha256, mediaType }) => ({ name, sizeBytes, sha256, mediaType }));
  return renderToStaticMarkup(createElement(Artifacts, { artifacts: artifactItems(RUN, sealed, stored) }));
}

describe("the artifacts section", () => {
  it("renders markup from the files as text only: no element of theirs reaches the page", () => {
    const html = render(Object.keys(FILES).map((name) => loaded(name)));
    // Every tag on the page is the component's own (text from the files has its "<" escaped) …
    const tags = new Set([...html.matchAll(/<([a-zA-Z][\w-]*)/g)].map((m) => m[1]!.toLowerCase()));
    expect(
      [...tags].filter(
        (tag) => !["ul", "li", "div", "span", "a", "p", "code", "table", "thead", "tbody", "tr", "th", "td", "details", "summary", "img", "link"].includes(tag),
      ),
    ).toEqual([]);
    // … and none carries an event handler or a javascript: URL.
    for (const [tag] of html.matchAll(/<[a-zA-Z][^>]*>/g)) expect(tag).not.toMatch(/\son\w+=|javascript:/i);
    expect(html).toContain("&lt;b&gt;alice&lt;/b&gt;");
    expect(html).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
    expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(html).toContain("&lt;/pre&gt;&lt;script&gt;alert(2)&lt;/script&gt;");
  });

  it("an SVG is only the src of an <img> from the image route; the fake PNG gets no image", () => {
    const html = render(Object.keys(FILES).map((name) => loaded(name)));
    const images = [...html.matchAll(/<img [^>]*>/g)].map((m) => m[0]);
    expect(images).toHaveLength(1);
    expect(images[0]).toContain(`src="/api/runs/${RUN}/artifact-images/evil.svg"`);
    expect(html).not.toContain("artifact-images/x.png");
    expect(html).toContain(`href="/api/runs/${RUN}/artifacts/x.png"`);
    expect(html).toContain("No preview: no preview for text/plain.");
  });

  it("a purged file shows when, with no link and no preview; a file with no stored bytes says so", () => {
    const html = render([loaded("report.csv", new Date("2027-01-02T03:04:05Z"))]);
    expect(html).toContain("purged by retention on");
    expect(html).toContain("2027-01-02 03:04:05 UTC");
    expect(html).not.toContain("/artifacts/report.csv");
    const sealedOnly = renderToStaticMarkup(
      createElement(Artifacts, { artifacts: artifactItems(RUN, [{ name: "old.csv", sizeBytes: 3, sha256: "ab".repeat(32) }], []) }),
    );
    expect(sealedOnly).toContain("the bytes were not kept");
    expect(sealedOnly).not.toContain("href=");
  });
});
