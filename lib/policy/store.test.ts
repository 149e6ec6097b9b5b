/**
 * Four eyes on policy publication, through the real service functions on PostgreSQL: one admin
 * alone cannot make a version decide, the proposer cannot approve their own, a reviewer cannot
 * approve, and two different admins can — each step audited in its transaction.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUser } from "@/lib/auth/users";
import type { Actor } from "@/lib/contracts/scopes";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { defaultPolicyText } from "./policy-set";
import { approvePolicyVersion, proposePolicyText, publishedPolicy, publishPolicyText } from "./store";

const seed: Actor = { type: "system", name: "seed" };
const PERMIT_ALL = '@id("everything")\n@reason("Anything goes.")\npermit (principal, action, resource);\n';

let db: TestDatabase;
type Person = Extract<Actor, { type: "user" }>;
let ada: Person;
let alan: Person;
let rita: Person;
let seededVersion: number;

async function person(email: string, role: "admin" | "reviewer"): Promise<Person> {
  const user = await db.prisma.$transaction((tx) => createUser(tx, seed, { email, role }));
  return { type: "user", id: user.id, email: user.email, role: user.role };
}

beforeAll(async () => {
  db = await createTestDatabase();
  ada = await person("ada@example.com", "admin");
  alan = await person("alan@example.com", "admin");
  rita = await person("rita@example.com", "reviewer");
  seededVersion = (await db.prisma.$transaction((tx) => publishPolicyText(tx, seed, defaultPolicyText()))).version;
});
afterAll(() => db?.drop());

const deciding = async () => (await publishedPolicy(db.prisma))?.version;
let proposals = 0;
/** Proposes `text`, by default permit-all with a comment of its own (the same text cannot be proposed twice). */
const propose = (actor: Actor, text = `${PERMIT_ALL}// proposal ${++proposals}\n`) => db.prisma.$transaction((tx) => proposePolicyText(tx, actor, text));
const approve = (actor: Actor, version: number) => db.prisma.$transaction((tx) => approvePolicyVersion(tx, actor, version));

describe("policy publication needs two admins", () => {
  it("one admin alone cannot publish permit-all: the direct path is refused and a proposal decides nothing", async () => {
    await expect(db.prisma.$transaction((tx) => publishPolicyText(tx, ada, PERMIT_ALL))).rejects.toMatchObject({
      code: "forbidden",
      details: { reason: "four_eyes" },
    });
    const { version } = await propose(ada);
    expect(await deciding()).toBe(seededVersion);
    const row = await db.prisma.policyVersion.findUniqueOrThrow({ where: { version } });
    expect(row).toMatchObject({ status: "proposed", createdById: ada.id, publishedAt: null });
    const event = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "policy.proposed", subjectId: row.id } });
    expect(event).toMatchObject({ actorId: row.createdById, data: { version } });
  });

  it("the proposer cannot approve their own version", async () => {
    const { version } = await propose(ada);
    await expect(approve(ada, version)).rejects.toMatchObject({ code: "forbidden", details: { reason: "own_proposal" } });
    expect((await db.prisma.policyVersion.findUniqueOrThrow({ where: { version } })).status).toBe("proposed");
    expect(await deciding()).toBe(seededVersion);
  });

  it("a reviewer, an agent or a system actor cannot approve, and none can propose", async () => {
    const { version } = await propose(ada);
    await expect(approve(rita, version)).rejects.toMatchObject({ code: "forbidden", details: { scope: "policies:manage" } });
    const agent: Actor = { type: "agent", id: "00000000-0000-4000-8000-000000000009", name: "bot", ownerId: "x", scopes: ["policies:manage"] };
    await expect(approve(agent, version)).rejects.toMatchObject({ code: "forbidden", details: { reason: "person_required" } });
    await expect(approve(seed, version)).rejects.toMatchObject({ code: "forbidden", details: { reason: "person_required" } });
    await expect(propose(rita)).rejects.toMatchObject({ code: "forbidden" });
    await expect(propose(seed)).rejects.toMatchObject({ code: "forbidden", details: { reason: "person_required" } });
    expect(await deciding()).toBe(seededVersion);
  });

  it("a second admin's approval publishes the version, retires the previous one, and is audited naming both", async () => {
    const { id, version } = await propose(ada, `${defaultPolicyText()}\n// approved by a second admin\n`);
    await approve(alan, version);
    expect(await deciding()).toBe(version);
    const rows = await db.prisma.policyVersion.findMany({ where: { status: "published" } });
    expect(rows).toEqual([expect.objectContaining({ version, createdById: ada.id, publishedById: alan.id })]);
    expect((await db.prisma.policyVersion.findUniqueOrThrow({ where: { version: seededVersion } })).status).toBe("retired");
    const event = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "policy.published", subjectId: id } });
    expect(event).toMatchObject({
      actorId: alan.id,
      data: { version, proposedById: ada.id, approvedById: alan.id },
    });
  });

  it("only a proposed version can be approved, once", async () => {
    const { version } = await propose(alan, `${defaultPolicyText()}\n// approved once\n`);
    await approve(ada, version);
    await expect(approve(ada, version)).rejects.toMatchObject({ code: "conflict" });
    await expect(approve(ada, seededVersion)).rejects.toMatchObject({ code: "conflict" });
    await expect(approve(ada, 99_999)).rejects.toMatchObject({ code: "not_found" });
  });

  it("the text of the published version, or of one proposed already, cannot be proposed again", async () => {
    const published = (await publishedPolicy(db.prisma))!;
    const { text } = await db.prisma.policyVersion.findUniqueOrThrow({ where: { version: published.version } });
    await expect(propose(ada, text)).rejects.toMatchObject({ code: "conflict", details: { version: published.version, status: "published" } });
    const pending = `${PERMIT_ALL}// waiting for a second admin\n`;
    const { version } = await propose(ada, pending);
    await expect(propose(alan, pending)).rejects.toMatchObject({
      code: "conflict",
      message: `This text is version ${version}, proposed already; propose a change to it.`,
    });
    // A text that differs, if only by a comment, is a change of its own.
    await expect(propose(alan, `${pending}// and a note\n`)).resolves.toMatchObject({ version: version + 1 });
  });

  it("publishing supersedes the proposals still waiting: none can be approved (it would undo the new version), and their text may be proposed again", async () => {
    const older = await propose(ada, `${PERMIT_ALL}// older proposal\n`);
    const newer = await propose(ada, `${defaultPolicyText()}\n// newer proposal\n`);
    const { id } = await approve(alan, newer.version);
    expect((await db.prisma.policyVersion.findUniqueOrThrow({ where: { version: older.version } })).status).toBe("superseded");
    const published = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "policy.published", subjectId: id } });
    expect(published.data).toMatchObject({ superseded: expect.arrayContaining([older.version]) });
    await expect(approve(alan, older.version)).rejects.toMatchObject({
      code: "conflict",
      message: `Version ${older.version} was waiting when another version was published, so it was written against an older policy; approving it would undo what was published since. Propose the change again on top of version ${newer.version}.`,
      details: { reason: "stale_proposal", published: newer.version },
    });
    expect(await deciding()).toBe(newer.version);
    // The same text, proposed again on top of the published version, is a proposal like any other.
    const again = await propose(ada, `${PERMIT_ALL}// older proposal\n`);
    await approve(alan, again.version);
    expect(await deciding()).toBe(again.version);
  });

  it("a proposal with errors is refused with its position", async () => {
    await expect(propose(ada, '@id("x")\n@reason("y")\npermit (principal, action, resource\n')).rejects.toMatchObject({ name: "PolicyValidationError" });
  });
});
