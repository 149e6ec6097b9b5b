/**
 * The published policy and skills remembered until they change (lib/db/remembered.ts), on a
 * real PostgreSQL: a second decision does not read which version is published; a version published
 * through the service or changed in SQL decides from the moment its announcement arrives; a skill
 * version published in SQL is what the next search sees; a remembered value cannot be changed
 * by a caller; a read
 * that raced a change is not remembered; a lost listening connection means every read goes to the
 * database until it is back.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Actor } from "@/lib/contracts/scopes";
import { listenSettingsChanges, type Remembered } from "@/lib/db/remembered";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { publishedPolicy, publishPolicyText } from "@/lib/policy/store";
import { createUser } from "@/lib/auth/users";
import { publishedSkills } from "./service";

const system: Actor = { type: "system", name: "test" };
let db: TestDatabase;
let remembered: Remembered;
let author: string;

const policyText = (id: string) => `@id("${id}")\n@reason("test")\npermit (principal, action == Action::"run", resource);\n`;

async function until(condition: () => boolean | Promise<boolean>, what: string, ms = 2_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const listening = () =>
  db.prisma.$queryRaw<{ pid: number }[]>`SELECT pid FROM pg_stat_activity WHERE application_name = 'airlock-settings-changes' AND query ILIKE 'LISTEN%'`;

/** Reads `key` through the remembered reads, counting the loads. */
function counted() {
  let loads = 0;
  return {
    read: (key = "k") => remembered.read(key, async () => ++loads),
    loads: () => loads,
  };
}

beforeAll(async () => {
  db = await createTestDatabase();
  await db.prisma.$transaction((tx) => publishPolicyText(tx, system, policyText("first")));
  ({ id: author } = await db.prisma.$transaction((tx) => createUser(tx, system, { email: "author@example.com", role: "admin" })));
  remembered = listenSettingsChanges(db.url);
  await until(async () => (await listening()).length > 0, "the listener is up", 10_000);
  // Up is announced to the listener after LISTEN returns: one read proves it (remembered from then on).
  await until(async () => {
    const probe = counted();
    await probe.read("probe");
    await probe.read("probe");
    return probe.loads() === 1;
  }, "reads are remembered");
}, 60_000);

afterAll(async () => {
  await remembered?.close();
  await db?.drop();
});

describe("remembered settings", () => {
  it("a value is loaded once and used again until a change is announced", async () => {
    const reads = counted();
    expect(await reads.read()).toBe(1);
    expect(await reads.read()).toBe(1);
    expect(reads.loads()).toBe(1);
    await db.prisma.$executeRaw`UPDATE "PolicyVersion" SET "createdAt" = "createdAt"`;
    await until(async () => (await reads.read()) === 2, "the change is announced");
  });

  it("attack: a policy published after the first decision decides the next one, through the service or in SQL", async () => {
    const before = await publishedPolicy(db.prisma, remembered);
    expect((await publishedPolicy(db.prisma, remembered))?.id).toBe(before!.id);
    await db.prisma.$transaction((tx) => publishPolicyText(tx, system, policyText("second")));
    await until(async () => (await publishedPolicy(db.prisma, remembered))?.version === before!.version + 1, "the new version decides");

    // Retired in SQL, nothing published: every proposal is denied again (fail closed), not decided by the remembered version.
    await db.prisma.$executeRaw`UPDATE "PolicyVersion" SET status = 'retired' WHERE status = 'published'`;
    await until(async () => (await publishedPolicy(db.prisma, remembered)) === null, "no version is published");
  });

  it("attack: a skill version published in SQL is what the next search sees, and nobody can change the list remembered", async () => {
    const [skill] = await db.prisma.$queryRaw<{ id: string }[]>`INSERT INTO "Skill" (id, name) VALUES (gen_random_uuid(), 'net-revenue') RETURNING id`;
    await db.prisma.$executeRaw`
      INSERT INTO "SkillVersion" (id, "skillId", version, status, description, language, code, "inputSchema", "outputSchema", fingerprint, "contentDigest", "draftedById")
      VALUES (gen_random_uuid(), ${skill!.id}::uuid, 1, 'published', 'Net revenue', 'javascript', 'async (args) => 1', '{"type":"object"}', '{}', 'f', 'd', ${author}::uuid)`;
    await until(async () => (await publishedSkills(db.prisma, remembered)).length === 1, "the published skill is seen");
    const list = await publishedSkills(db.prisma, remembered);
    expect(await publishedSkills(db.prisma, remembered)).toBe(list);
    expect(() => (list as unknown[]).push({})).toThrow(TypeError);
    expect(() => ((list[0] as { description: string }).description = "changed")).toThrow(TypeError);
    await db.prisma.$executeRaw`
      INSERT INTO "SkillVersion" (id, "skillId", version, status, description, language, code, "inputSchema", "outputSchema", fingerprint, "contentDigest", "draftedById")
      VALUES (gen_random_uuid(), ${skill!.id}::uuid, 2, 'published', 'Net revenue v2', 'javascript', 'async (args) => 2', '{"type":"object"}', '{}', 'f', 'd2', ${author}::uuid)`;
    await until(async () => (await publishedSkills(db.prisma, remembered))[0]?.version === 2, "the new version is seen");
  });

  it("a read that began before a change is not remembered", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let loads = 0;
    const slow = remembered.read("raced", async () => {
      loads++;
      await gate;
      return "before";
    });
    // Any announcement counts, a forged one included: it can only make the next read load again.
    await db.prisma.$executeRaw`SELECT pg_notify('airlock_settings_changed', 'forged')`;
    await new Promise((resolve) => setTimeout(resolve, 200));
    release();
    expect(await slow).toBe("before");
    expect(await remembered.read("raced", async () => (++loads, "after"))).toBe("after");
    expect(loads).toBe(2);
  });

  it("a lost listening connection: every read loads until it is back", async () => {
    const reads = counted();
    await reads.read();
    const [listener] = await listening();
    await db.prisma.$executeRaw`SELECT pg_terminate_backend(${listener!.pid}::int)`;
    await until(async () => (await reads.read()) === 2, "the loss is seen");
    // Down (or just back, which forgets too): nothing read meanwhile is used without loading again.
    const whileDown = reads.loads();
    await reads.read();
    expect(reads.loads()).toBeGreaterThan(whileDown);
    await until(
      async () => {
        const n = reads.loads();
        await reads.read();
        await reads.read();
        return reads.loads() === n + 1;
      },
      "reads are remembered again",
      10_000,
    );
  });
});
