/**
 * publishedSkills, which every search_tools reads in one statement: the newest published version
 * of each skill, by name; drafts and rejected versions are never offered, however new.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { publishedSkills } from "./service";

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
  const user = await db.prisma.user.create({ data: { email: "ada@example.com", name: "Ada", role: "admin" } });
  const version = (skillId: string, version: number, status: "draft" | "published" | "rejected") =>
    db.prisma.skillVersion.create({
      data: {
        skillId,
        version,
        status,
        description: `v${version} ${status}`,
        language: "javascript",
        code: `async () => ${version}`,
        inputSchema: { type: "object", version },
        outputSchema: { type: "number" },
        fingerprint: "f",
        contentDigest: `d${version}`,
        draftedById: user.id,
      },
    });
  const [zeta, alpha, beta] = await Promise.all(["zeta", "alpha", "beta"].map((name) => db.prisma.skill.create({ data: { name } })));
  await version(zeta!.id, 1, "published");
  await version(alpha!.id, 1, "published");
  await version(alpha!.id, 2, "published");
  await version(alpha!.id, 3, "draft");
  await version(alpha!.id, 4, "rejected");
  await version(beta!.id, 1, "draft");
}, 60_000);

afterAll(() => db?.drop());

it("offers the newest published version of each skill, by name, and never a draft or a rejected one", async () => {
  const skills = await publishedSkills(db.prisma);
  expect(skills.map(({ name, version, description }) => ({ name, version, description }))).toEqual([
    { name: "alpha", version: 2, description: "v2 published" },
    { name: "zeta", version: 1, description: "v1 published" },
  ]);
  expect(skills[0]).toMatchObject({
    language: "javascript",
    code: "async () => 2",
    inputSchema: { type: "object", version: 2 },
    outputSchema: { type: "number" },
  });
});
