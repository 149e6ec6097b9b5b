import { hostname, userInfo } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tempCheckpoints } from "@/lib/audit/testing";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { auditCommand, type AuditCommandDeps } from "./audit";
import { cliActor } from "./person";

let db: TestDatabase;
let deps: AuditCommandDeps;

function capture() {
  const out = { stdout: "", stderr: "" };
  return {
    out,
    io: { stdout: (s: string) => void (out.stdout += s), stderr: (s: string) => void (out.stderr += s), readStdin: async () => "" },
  };
}

const lastEvent = (action: string) => db.prisma.auditEvent.findFirstOrThrow({ where: { action }, orderBy: { id: "desc" } });

beforeAll(async () => {
  db = await createTestDatabase();
  const checkpoints = await tempCheckpoints();
  deps = { withDatabase: (fn) => fn(db.prisma), checkpoints: () => checkpoints };
  await db.prisma.user.create({ data: { email: "carla@example.com", name: "Carla", role: "compliance" } });
  await db.prisma.user.create({ data: { email: "gone@example.com", name: "Gone", role: "compliance", disabledAt: new Date() } });
  await db.prisma.user.create({ data: { email: "ada@example.com", name: "Ada", role: "admin" } });
});
afterAll(() => db?.drop());

describe("who a CLI audit command records", () => {
  it("without --as: cli:<os user>@<host>", async () => {
    const { io } = capture();
    expect(await auditCommand(["export", "--format", "jsonl"], io, deps)).toBe(0);
    const event = await lastEvent("audit.exported");
    const expected = `cli:${userInfo().username.replace(/[^A-Za-z0-9._-]/g, "_")}@${hostname().replace(/[^A-Za-z0-9._-]/g, "_")}`;
    expect(event).toMatchObject({ actorType: "system", actorId: expected });
    expect(await cliActor(db.prisma)).toEqual({ type: "system", name: expected });
  });

  it("--as an enabled user: that person, by id, for export, verify and checkpoint", async () => {
    const carla = await db.prisma.user.findUniqueOrThrow({ where: { email: "carla@example.com" } });
    const { io, out } = capture();
    expect(await auditCommand(["export", "--format", "csv", "--as", "Carla@Example.com", "--per-run", "--manifest", "/dev/null"], io, deps)).toBe(0);
    expect(out.stdout.split("\r\n")[0]).toMatch(/^runId,submitted \(UTC\),/);
    expect(await lastEvent("audit.exported")).toMatchObject({ actorType: "user", actorId: carla.id, data: expect.objectContaining({ rows: "runs" }) });
    expect(await auditCommand(["verify", "--as", "carla@example.com"], capture().io, deps)).toBe(0);
    expect(await lastEvent("audit.verified")).toMatchObject({ actorType: "user", actorId: carla.id });
    expect(await auditCommand(["checkpoint", "--as", "carla@example.com"], capture().io, deps)).toBe(0);
    expect(await lastEvent("audit.checkpointed")).toMatchObject({ actorType: "user", actorId: carla.id });
  });

  it("--no-audit-reads: the manifest says the log's own reads were left out", async () => {
    const { io, out } = capture();
    expect(await auditCommand(["export", "--format", "jsonl", "--no-audit-reads"], io, deps)).toBe(0);
    const lines = out.stdout
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(lines[0].manifest.auditReads).toBe("excluded");
    expect(lines.slice(1).filter((e) => String(e.action).startsWith("audit."))).toEqual([]);
  });

  it("--as an unknown or disabled user is refused (exit 1, as every door refuses an unknown email), a blank or malformed one is a usage error; nothing exported", async () => {
    const before = await db.prisma.auditEvent.count({ where: { action: "audit.exported" } });
    for (const [email, refusal] of [
      ["nobody@example.com", { code: "not_found", message: "--as nobody@example.com: no user has that email" }],
      ["gone@example.com", { code: "forbidden", message: "--as gone@example.com: that user is disabled" }],
    ] as const) {
      const { io, out } = capture();
      await expect(auditCommand(["export", "--format", "jsonl", "--as", email], io, deps)).rejects.toMatchObject(refusal);
      expect(out.stdout).toBe("");
    }
    for (const email of [" ", "ops"]) {
      const { io, out } = capture();
      expect(await auditCommand(["export", "--format", "jsonl", "--as", email], io, deps)).toBe(2);
      expect(out.stderr).toMatch(new RegExp(`^airlock: --as must be an email address, not "${email}"\n.*Usage:`, "s"));
    }
    expect(await db.prisma.auditEvent.count({ where: { action: "audit.exported" } })).toBe(before);
    expect(await lastEvent("auth.forbidden")).toMatchObject({ actorType: "user", data: { door: "cli", reason: "user_disabled", scope: null } });
  });

  it("--as a person without the scope: refused by the service, and the refusal recorded", async () => {
    const ada = await db.prisma.user.findUniqueOrThrow({ where: { email: "ada@example.com" } });
    await expect(auditCommand(["export", "--format", "jsonl", "--as", "ada@example.com"], capture().io, deps)).rejects.toThrow(/audit:export/);
    expect(await lastEvent("auth.forbidden")).toMatchObject({ actorId: ada.id, data: { door: "cli:audit export", scope: "audit:export" } });
  });

  it("refuses --per-run with --no-audit-reads", async () => {
    const { io, out } = capture();
    expect(await auditCommand(["export", "--format", "csv", "--per-run", "--no-audit-reads"], io, deps)).toBe(2);
    expect(out.stderr).toContain("--no-audit-reads applies to event rows");
  });
});
