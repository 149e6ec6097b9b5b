/**
 * Artifacts in a real browser against `next start`: a run writes out/report.csv, out/data.json,
 * out/chart.svg and a hostile out/evil.svg; the run page shows the CSV as a table, the JSON as a
 * tree and both SVGs as images (the hostile one's script never runs: it is only an `<img>`), and a
 * download carries the hostile-content headers through the whole stack (the proxy included) and
 * is audited.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { createPrismaClient, type PrismaClient } from "../lib/db";
import { expect, test } from "./fixtures";
import { RunPage } from "./pages/run-page";

type TextResult = { content: { type: string; text: string }[] };

let db: PrismaClient;
test.beforeAll(({ state }) => {
  db = createPrismaClient(state.databaseUrl);
});
test.afterAll(async () => {
  await db?.$disconnect();
});

const SCRIPT = `// artifacts ${Date.now()}
const fs = await import("node:fs");
fs.writeFileSync("out/report.csv", "customer,amount\\nAcme <b>Corp</b>,120.50\\nGlobex,99.00\\n");
fs.writeFileSync("out/data.json", JSON.stringify({ total: 219.5, currency: "EUR", lines: [{ customer: "Acme" }, { customer: "Globex" }] }));
fs.writeFileSync("out/chart.svg", '<svg xmlns="http://www.w3.org/2000/svg" width="120" height="40"><rect width="120" height="40" fill="teal"/></svg>');
fs.writeFileSync("out/evil.svg", '<svg xmlns="http://www.w3.org/2000/svg" width="20" height="20" onload="top.document.title=\\'pwned\\'"><script>top.document.title="pwned"</script><rect width="20" height="20"/></svg>');
return { files: 4 };`;

async function runWithArtifacts(client: Client): Promise<string> {
  const submitted = (await client.callTool({ name: "submit_run", arguments: { code: SCRIPT, purpose: "Write a report with a chart" } })) as TextResult;
  const { runId } = JSON.parse(submitted.content[0]!.text) as { runId: string };
  for (let i = 0; i < 6; i++) {
    const polled = (await client.callTool({ name: "get_run", arguments: { runId, waitSeconds: 20 } })) as TextResult;
    const status = (JSON.parse(polled.content[0]!.text) as { status: string }).status;
    if (!["submitted", "queued", "running"].includes(status)) {
      expect(status).toBe("succeeded");
      return runId;
    }
  }
  throw new Error(`run ${runId} did not finish`);
}

test("the run page previews a CSV as a table, JSON as a tree and SVGs as images; downloads are sandboxed attachments, audited", async ({
  page,
  mcpClient,
  loginAs,
}) => {
  test.setTimeout(90_000);
  const runId = await runWithArtifacts(mcpClient);
  await loginAs("compliance");
  const person = await db.user.findUniqueOrThrow({ where: { email: "compliance@airlock.local" } });
  const dialogs: string[] = [];
  page.on("dialog", (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  await new RunPage(page).goto(runId);
  const title = await page.title();
  // Tabs of several runs are told apart.
  expect(title).toBe(`Run ${runId.slice(0, 8)} · Airlock`);

  const section = page.getByTestId("artifacts");
  const table = section.locator('[data-name="report.csv"]').getByTestId("artifact-table");
  await expect(table.getByRole("columnheader")).toHaveText(["customer", "amount"]);
  await expect(table.getByRole("cell", { name: "Acme <b>Corp</b>" })).toBeVisible();
  await expect(table.locator("b")).toHaveCount(0);

  const tree = section.locator('[data-name="data.json"]').getByTestId("artifact-tree");
  await expect(tree).toContainText("total: 219.5");
  await expect(tree).toContainText('currency: "EUR"');
  // Deeper levels start folded; a click on a summary unfolds one (<details>, no script of ours).
  const globex = tree.getByText('"Globex"', { exact: true });
  await expect(globex).toBeHidden();
  await tree
    .locator("summary")
    .filter({ hasText: /^1: \{1\}$/ })
    .click();
  await expect(globex).toBeVisible();

  for (const [name, width] of [
    ["chart.svg", 120],
    ["evil.svg", 20],
  ] as const) {
    const image = section.locator(`[data-name="${name}"]`).getByTestId("artifact-image");
    await expect(image).toHaveAttribute("src", `/api/runs/${runId}/artifact-images/${name}`);
    await image.scrollIntoViewIfNeeded();
    await expect.poll(() => image.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBe(width);
  }
  // Each image shown was fetched, and recorded, once.
  const fetched = await db.auditEvent.findMany({ where: { action: "run.artifact_downloaded", subjectId: runId, actorId: person.id } });
  expect(fetched.map((e) => (e.data as { name: string; via: string }).name + ":" + (e.data as { via: string }).via).sort()).toEqual([
    "chart.svg:image",
    "evil.svg:image",
  ]);
  // Drawn by <img>, the hostile SVG ran nothing; no SVG is in the page's own DOM.
  expect(await page.title()).toBe(title);
  expect(dialogs).toEqual([]);
  expect(await section.locator("svg, iframe, object, embed").count()).toBe(0);

  // A download, through the proxy and the route, as a browser session would fetch it.
  const before = await db.auditEvent.count({ where: { action: "run.artifact_downloaded", subjectId: runId, data: { path: ["via"], equals: "download" } } });
  const href = await section.locator('[data-name="evil.svg"]').getByTestId("artifact-download").getAttribute("href");
  expect(href).toBe(`/api/runs/${runId}/artifacts/evil.svg`);
  const response = await page.request.get(href!);
  expect(response.status()).toBe(200);
  expect(response.headers()).toMatchObject({
    "content-type": "application/octet-stream",
    "content-disposition": `attachment; filename="evil.svg"; filename*=UTF-8''evil.svg`,
    "content-security-policy": "sandbox; default-src 'none'",
    "x-content-type-options": "nosniff",
  });
  expect((await response.body()).toString()).toContain("<script>");
  const events = await db.auditEvent.findMany({
    where: { action: "run.artifact_downloaded", subjectId: runId, data: { path: ["via"], equals: "download" } },
    orderBy: { id: "asc" },
  });
  expect(events).toHaveLength(before + 1);
  expect(events.at(-1)).toMatchObject({
    actorType: "user",
    actorId: person.id,
    data: { name: "evil.svg", sizeBytes: expect.any(Number), sha256: expect.any(String) },
  });

  // The image route answers an <img> only: opened as a document, the SVG is refused.
  const opened = await page.goto(`/api/runs/${runId}/artifact-images/evil.svg`);
  expect(opened?.status()).toBe(400);
  expect(await page.title()).not.toBe("pwned");
  const image = await page.request.get(`/api/runs/${runId}/artifact-images/chart.svg`);
  expect(image.headers()).toMatchObject({
    "content-type": "image/svg+xml",
    "content-security-policy": "sandbox; default-src 'none'",
    "x-content-type-options": "nosniff",
  });
});
