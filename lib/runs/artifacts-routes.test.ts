/**
 * The artifact routes (app/api/runs/[id]/artifacts, …/artifact-images) on real PostgreSQL, with
 * artifacts stored by the storage function as the executor stores them; only next-auth's session
 * lookup is faked. A hostile script's files come back as sandboxed attachments, an HTML file
 * named x.png is never served as an image, an SVG is served only to an `<img>`, odd names are
 * not found, every handed-out byte is preceded by its audit event, and the proxy in front of them
 * sends their policy, not the console's.
 */
import { createHash, randomBytes } from "node:crypto";
import { NextRequest } from "next/server";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { createAgent } from "@/lib/auth/agents";
import { createUser } from "@/lib/auth/users";
import type { Actor } from "@/lib/contracts/scopes";
import { setEnvForChildren } from "@/lib/env";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { artifactRecords, storeArtifacts } from "./artifacts";
import { transitionRun } from "./states";

const session = vi.hoisted(() => ({ userId: null as string | null }));
vi.mock("@/lib/auth/next-auth", () => ({ auth: async () => (session.userId ? { user: { id: session.userId }, sessionVersion: 0 } : null) }));

const system: Actor = { type: "system", name: "test" };
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==", "base64");
const FILES: Record<string, Buffer> = {
  "evil.html": Buffer.from("<script>alert(document.cookie)</script>"),
  "evil.svg": Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script></svg>'),
  "x.png": Buffer.from("<html><script>alert(3)</script></html>"),
  "sub/real.png": PNG,
  "purged.csv": Buffer.from("a,b\n1,2\n"),
};

let db: TestDatabase;
let compliance: { id: string };
let runId: string;

type Route = (request: NextRequest, context: { params: Promise<{ id: string; name: string[] }> }) => Promise<Response>;
let download: Route;
let image: Route;

function call(route: Route, segments: string[], headers: Record<string, string> = {}, id = runId): Promise<Response> {
  const path = `/api/runs/${id}/${route === download ? "artifacts" : "artifact-images"}/${segments.map(encodeURIComponent).join("/")}`;
  return route(new NextRequest(`http://localhost${path}`, { headers }), { params: Promise.resolve({ id, name: segments }) });
}

const events = () => db.prisma.auditEvent.findMany({ where: { action: "run.artifact_downloaded", subjectId: runId }, orderBy: { id: "asc" } });

beforeAll(async () => {
  vi.stubEnv("__NEXT_EXPERIMENTAL_AUTH_INTERRUPTS", "true");
  db = await createTestDatabase();
  setEnvForChildren({ DATABASE_URL: db.url });
  await db.prisma.$transaction((tx) => createUser(tx, system, { email: "owner@example.com", role: "admin" }));
  compliance = await db.prisma.$transaction((tx) => createUser(tx, system, { email: "compliance@example.com", role: "compliance" }));
  const agent = await db.prisma.$transaction((tx) => createAgent(tx, system, { name: "artist", ownerEmail: "owner@example.com" }));
  const [run] = await db.prisma.$queryRawUnsafe<{ id: string }[]>(
    `INSERT INTO "Run" (id, "agentId", status, language, code, "codeSha256", purpose, "inputsDigest", "requestDigest", "updatedAt")
     VALUES (gen_random_uuid(), '${agent.agentId}', 'running', 'javascript', 'return 1;', 'x', 'files', 'x', '${randomBytes(8).toString("hex")}', now())
     RETURNING id::text`,
  );
  runId = run!.id;
  const records = artifactRecords(
    Object.entries(FILES).map(([name, bytes]) => ({
      name,
      sizeBytes: bytes.length,
      sha256: createHash("sha256").update(bytes).digest("hex"),
      base64: bytes.toString("base64"),
    })),
  );
  const execution = {
    wallMs: 1,
    cpuMs: 1,
    peakRssMb: 1,
    toolCalls: 0,
    logs: [],
    flags: [],
    truncated: false,
    artifacts: records.map(({ bytes: _, ...sealed }) => sealed),
  };
  await db.prisma.$transaction(async (tx) => {
    await transitionRun(tx, system, { runId, from: "running", to: "succeeded", data: { execution } });
    await storeArtifacts(tx, runId, records);
  });
  const purged = records.find((r) => r.name === "purged.csv")!;
  await db.prisma.$transaction(async (tx) => {
    await tx.$executeRawUnsafe(`SELECT set_config('airlock.purge_door', 'open', true)`);
    await tx.$executeRawUnsafe(`UPDATE "ArtifactBlob" SET bytes = NULL, "purgedAt" = '2027-01-02T03:04:05Z' WHERE sha256 = '${purged.sha256}'`);
  });
  download = (await import("@/app/api/runs/[id]/artifacts/[...name]/route")).GET as unknown as Route;
  image = (await import("@/app/api/runs/[id]/artifact-images/[...name]/route")).GET as unknown as Route;
});

beforeEach(() => {
  session.userId = compliance.id;
});

afterAll(async () => {
  const { prisma } = await import("@/lib/db");
  await prisma().$disconnect();
  await db?.drop();
});

describe("the download route", () => {
  it("sends a hostile HTML file as a sandboxed, unsniffable octet-stream attachment, after its audit event", async () => {
    const before = (await events()).length;
    const response = await call(download, ["evil.html"]);
    expect(response.status).toBe(200);
    expect(Object.fromEntries(response.headers)).toMatchObject({
      "content-type": "application/octet-stream",
      "content-disposition": `attachment; filename="evil.html"; filename*=UTF-8''evil.html`,
      "content-security-policy": "sandbox; default-src 'none'",
      "x-content-type-options": "nosniff",
      "cache-control": "private, no-store",
      "x-airlock-artifact-sha256": createHash("sha256").update(FILES["evil.html"]!).digest("hex"),
    });
    expect(Buffer.from(await response.arrayBuffer()).equals(FILES["evil.html"]!)).toBe(true);
    const recorded = (await events()).slice(before);
    expect(recorded).toHaveLength(1);
    expect(recorded[0]).toMatchObject({
      actorType: "user",
      actorId: compliance.id,
      data: { name: "evil.html", via: "download", sizeBytes: FILES["evil.html"]!.length },
    });
  });

  it("an SVG and a fake PNG download the same way: bytes, never a type a browser would render", async () => {
    for (const segments of [["evil.svg"], ["x.png"], ["sub", "real.png"]]) {
      const response = await call(download, segments);
      expect(response.status, segments.join("/")).toBe(200);
      expect(response.headers.get("content-type")).toBe("application/octet-stream");
      expect(response.headers.get("content-disposition")).toMatch(/^attachment; /);
    }
  });

  it("anonymous callers get 401 and no bytes; nothing is recorded", async () => {
    session.userId = null;
    const before = (await events()).length;
    const response = await call(download, ["evil.html"]);
    expect(response.status).toBe(401);
    expect(await response.text()).not.toContain("<script>");
    expect(await events()).toHaveLength(before);
  });

  it("traversal, encoded and odd unicode names are not found, nor is another run's id", async () => {
    for (const segments of [
      ["..", "evil.html"],
      ["sub", "..", "..", "evil.html"],
      ["..%2Fevil.html"],
      ["%2e%2e", "evil.html"],
      ["évil.html"],
      ["evil\u202E.html"],
      ["evil.html\u0000"],
      [""],
    ]) {
      const response = await call(download, segments);
      expect(response.status, JSON.stringify(segments)).toBe(404);
      expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    }
    expect((await call(download, ["evil.html"], {}, crypto.randomUUID())).status).toBe(404);
    expect((await call(download, ["evil.html"], {}, "../../etc")).status).toBe(404);
  });

  it("a purged file is 410 and says when retention purged it", async () => {
    const response = await call(download, ["purged.csv"]);
    expect(response.status).toBe(410);
    expect(await response.json()).toMatchObject({ error: { code: "gone", message: expect.stringContaining("purged on 2027-01-02 by retention") } });
  });
});

describe("the image route", () => {
  it("serves a real PNG and an SVG as images, with the same hostile-content headers", async () => {
    const png = await call(image, ["sub", "real.png"], { "sec-fetch-dest": "image" });
    expect(png.status).toBe(200);
    expect(Object.fromEntries(png.headers)).toMatchObject({
      "content-type": "image/png",
      "content-security-policy": "sandbox; default-src 'none'",
      "x-content-type-options": "nosniff",
      "content-disposition": `attachment; filename="real.png"; filename*=UTF-8''real.png`,
    });
    const svg = await call(image, ["evil.svg"], { "sec-fetch-dest": "image" });
    expect(svg.status).toBe(200);
    expect(svg.headers.get("content-type")).toBe("image/svg+xml");
    expect(svg.headers.get("content-security-policy")).toBe("sandbox; default-src 'none'");
    const recorded = (await events()).slice(-2);
    expect(recorded.map((e) => (e.data as { via: string; name: string }).name + ":" + (e.data as { via: string }).via)).toEqual([
      "sub/real.png:image",
      "evil.svg:image",
    ]);
  });

  it("never serves the HTML named x.png as image/png, nor an HTML file as an image", async () => {
    for (const name of ["x.png", "evil.html"]) {
      const response = await call(image, [name]);
      expect(response.status, name).toBe(400);
      expect(response.headers.get("content-type")).toMatch(/^application\/json/);
      expect(await response.text()).not.toContain("<script>");
    }
  });

  it("refuses an SVG opened as a document or framed: only an <img> may fetch it", async () => {
    const before = (await events()).length;
    for (const destination of ["document", "iframe", "object", "embed", "script"]) {
      const response = await call(image, ["evil.svg"], { "sec-fetch-dest": destination });
      expect(response.status, destination).toBe(400);
      expect(await response.text()).not.toContain("<script>");
    }
    expect(await events()).toHaveLength(before);
  });
});

describe("the proxy in front of both routes", () => {
  it("gives them the hostile-content policy instead of the console's (a route cannot replace a header the proxy set)", async () => {
    const { proxy } = await import("@/proxy");
    const through = (path: string) => proxy(new NextRequest(`http://localhost${path}`, { headers: { host: "localhost:3000" } }));
    for (const path of [`/api/runs/${runId}/artifacts/evil.svg`, `/api/runs/${runId}/artifact-images/evil.svg`, `/%61pi/runs/${runId}/artifacts/evil.svg`]) {
      expect(through(path).headers.get("content-security-policy"), path).toBe("sandbox; default-src 'none'");
    }
    expect(through(`/runs/${runId}`).headers.get("content-security-policy")).toMatch(/script-src 'self' 'nonce-/);
  });
});
