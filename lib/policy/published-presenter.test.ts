/**
 * The Policies page's read model on PostgreSQL: the published version listed policy by policy
 * (id, effect, outcome, annotations, reason) from the set that decides, and the shipped text's
 * comments written for a compliance reader, with no pointers into the source code.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Actor } from "@/lib/contracts/scopes";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";
import { defaultPolicyText } from "./policy-set";
import { publishedPolicyView } from "./published-presenter";
import { publishPolicyText } from "./store";

const seed: Actor = { type: "system", name: "seed" };
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.drop());

const publish = (text: string) => db.prisma.$transaction((tx) => publishPolicyText(tx, seed, text));

describe("publishedPolicyView", () => {
  it("answers null while no version is published", async () => {
    expect(await publishedPolicyView(db.prisma)).toBeNull();
  });

  it("lists each shipped policy in text order with its effect, outcome, annotations and reason", async () => {
    const { version } = await publish(defaultPolicyText());
    const view = (await publishedPolicyView(db.prisma))!;
    expect(view.version).toBe(version);
    expect(view.text).toBe(defaultPolicyText());
    const ids = [...defaultPolicyText().matchAll(/^@id\("([^"]+)"\)/gm)].map((match) => match[1]);
    expect(view.policies.map((policy) => policy.id)).toEqual(ids);
    const byId = new Map(view.policies.map((policy) => [policy.id, policy]));
    expect(byId.get("deny-critical-findings")).toMatchObject({ effect: "forbid", outcome: "deny", approvals: 0, role: null });
    expect(byId.get("allow-read-only-unregulated")).toMatchObject({ effect: "permit", outcome: "allow", approvals: 0, role: null });
    expect(byId.get("hold-upstream-instructions")).toMatchObject({ action: "release", effect: "permit", outcome: "review", approvals: 1 });
    expect(byId.get("release-results")).toMatchObject({ action: "release", outcome: "allow" });
    expect(byId.get("review-regulated-data")).toEqual({
      id: "review-regulated-data",
      action: "run",
      effect: "permit",
      outcome: "review",
      approvals: 2,
      role: "reviewer",
      maxWritesPerTool: null,
      reason: "The script touches pii, financial or phi data (through its inputs or its tools); two reviewers must approve.",
    });
  });

  it("shows @maxWritesPerTool, and keeps hidden characters of the text for the page to mark", async () => {
    await publish(
      '// Bulk exports\u202e are reviewed.\n@id("review-exports")\n@reason("Exports need one reviewer.")\n@approvals("1")\n@maxWritesPerTool("10")\npermit (principal, action, resource);\n',
    );
    const view = (await publishedPolicyView(db.prisma))!;
    expect(view.policies).toEqual([
      {
        id: "review-exports",
        action: "run",
        effect: "permit",
        outcome: "review",
        approvals: 1,
        role: "reviewer",
        maxWritesPerTool: 10,
        reason: "Exports need one reviewer.",
      },
    ]);
    expect(view.text).toContain("\u202e");
  });
});

describe("the shipped policy text", () => {
  it("has comments for a compliance reader: no source paths, file names or references to the schema", () => {
    const comments = defaultPolicyText()
      .split("\n")
      .filter((line) => line.trimStart().startsWith("//"));
    expect(comments.length).toBeGreaterThan(3);
    for (const comment of comments) {
      expect(comment).not.toMatch(/\b(lib|app|components|prisma|scripts)\//);
      expect(comment).not.toMatch(/\.(ts|tsx|js|mjs|json)\b/);
      expect(comment).not.toMatch(/\bschema\b/i);
    }
  });
});
