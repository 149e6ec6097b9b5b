/**
 * Demo data for a first start: one person per role (two reviewers, so the two-person rule can be
 * tried; two admins, so a policy version or a quarantined tool can be proposed by one and approved
 * by the other), and one agent with a token. The default policy is published by the seed itself
 * (`system:seed`), the one publication without a second admin. Passwords come from
 * AIRLOCK_DEMO_PASSWORD or are generated; nothing is a constant in the code. Given the config, the
 * seed registers its upstream servers as the first start's (lib/broker/db-registry.ts): the first
 * listing of their tools is accepted by `system:seed` (audited `tool.accepted`); a tool or server
 * added later stays quarantined until two admins accept it. Seeding happens once: if any user
 * exists, it does nothing.
 */
import type { Db } from "@/lib/db";
import { createAgent } from "@/lib/auth/agents";
import type { AirlockConfig } from "@/lib/broker/config";
import { registerServers } from "@/lib/broker/db-registry";
import { generatePassword } from "@/lib/auth/passwords";
import type { Actor, Role } from "@/lib/contracts/scopes";
import { createUser } from "@/lib/auth/users";
import { defaultPolicyText } from "@/lib/policy/policy-set";
import { publishPolicyText } from "@/lib/policy/store";
import { createDataset } from "@/lib/runs/datasets";

export const DEMO_USERS: { email: string; name: string; role: Role }[] = [
  { email: "admin@airlock.local", name: "Ada Admin", role: "admin" },
  { email: "admin2@airlock.local", name: "Alan Admin", role: "admin" },
  { email: "reviewer@airlock.local", name: "Rita Reviewer", role: "reviewer" },
  { email: "reviewer2@airlock.local", name: "Rafael Reviewer", role: "reviewer" },
  { email: "compliance@airlock.local", name: "Carla Compliance", role: "compliance" },
];

export const DEMO_AGENT = "demo-agent";

export const DEMO_DATASETS = [
  {
    name: "fx-rates.csv",
    dataClass: "public",
    mediaType: "text/csv",
    content: "currency,usd_per_unit\nUSD,1\nEUR,1.08\nGBP,1.27\nJPY,0.0067\n",
  },
  {
    name: "vip-customers.json",
    dataClass: "pii",
    mediaType: "application/json",
    content: JSON.stringify([
      { email: "ana.silva@example.com", tier: "gold" },
      { email: "li.wei@example.com", tier: "platinum" },
    ]),
  },
] as const;

export type DemoCredentials = {
  users: { email: string; role: Role; password: string }[];
  agent: { name: string; token: string };
};

export async function seedDemo(db: Db, options: { password?: string; config?: AirlockConfig } = {}): Promise<DemoCredentials | null> {
  const actor = { type: "system", name: "seed" } satisfies Actor;
  return db.$transaction(
    async (tx) => {
      if ((await tx.user.count()) > 0) return null;
      const users: DemoCredentials["users"] = [];
      for (const user of DEMO_USERS) {
        const password = options.password ?? generatePassword();
        await createUser(tx, actor, { ...user, password });
        users.push({ email: user.email, role: user.role, password });
      }
      const agent = await createAgent(tx, actor, { name: DEMO_AGENT, ownerEmail: "admin@airlock.local" });
      await publishPolicyText(tx, actor, defaultPolicyText());
      for (const dataset of DEMO_DATASETS) await createDataset(tx, actor, dataset);
      if (options.config) await registerServers(tx, options.config, actor);
      return { users, agent: { name: agent.name, token: agent.token } };
    },
    { timeout: 60_000 },
  );
}
