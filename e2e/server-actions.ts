/**
 * The console's server actions as a client other than the console calls them: found in the
 * build's manifest (ids exist only after `next build`), sent as React's client sends them
 * (encodeReply, `Next-Action`), for the authorization matrix and the fuzzing spec.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Browser } from "@playwright/test";
import type { Scope } from "../lib/contracts/scopes";
import { LoginPage } from "./pages/login-page";

const RUN = "00000000-0000-4000-8000-0000000000aa";

export type ActionEntry = { scope: Scope; page: string; fields: Record<string, string | string[]>; previousOnly?: boolean };

const NOWHERE = "00000000-0000-4000-8000-0000000000bb";
/**
 * Every server action: its scope (checked against its source), the page it is sent from, and form
 * fields its schema accepts that name nothing existing (so an allowed call changes nothing).
 */
export const ACTIONS: Record<string, ActionEntry> = {
  createAgentAction: { scope: "agents:manage", page: "/agents", fields: { name: "matrix-nobody", ownerEmail: "nobody@matrix.invalid", scopes: ["runs:read"] } },
  revokeAgentAction: { scope: "agents:manage", page: "/agents", fields: { name: "matrix-no-such-agent" } },
  verifyAuditAction: { scope: "audit:read", page: "/audit", fields: {}, previousOnly: true },
  placeHoldAction: { scope: "audit:read", page: `/audit/runs/${RUN}`, fields: { runId: RUN, on: "run", reason: "matrix" } },
  releaseHoldAction: { scope: "audit:read", page: `/audit/runs/${RUN}`, fields: { holdId: NOWHERE, reason: "matrix", runId: RUN } },
  draftAction: { scope: "policies:manage", page: "/policies", fields: { text: "not cedar", intent: "check" } },
  approveAction: { scope: "policies:manage", page: "/policies", fields: { version: "2000000000" } },
  decideAction: {
    scope: "runs:review",
    page: `/runs/${RUN}`,
    fields: { runId: RUN, verdict: "reject", comment: "matrix", codeSha256: "0".repeat(64), capabilitySet: "[]", inputsDigest: "0".repeat(64) },
  },
  cancelAction: { scope: "runs:review", page: `/runs/${RUN}`, fields: { runId: RUN } },
  releaseAction: { scope: "runs:review", page: `/runs/${RUN}`, fields: { runId: RUN, comment: "matrix", resultDigest: "0".repeat(64) } },
  withholdAction: { scope: "runs:review", page: `/runs/${RUN}`, fields: { runId: RUN, comment: "matrix", resultDigest: "0".repeat(64) } },
  acceptToolAction: { scope: "tools:manage", page: "/tools", fields: { server: "matrix-nowhere", tool: "none", schemaHash: "0".repeat(64) } },
  proposeOverrideAction: {
    scope: "tools:manage",
    page: "/tools",
    fields: {
      server: "matrix-nowhere",
      tool: "none",
      readOnlyHint: "claim",
      destructiveHint: "claim",
      idempotentHint: "claim",
      openWorldHint: "claim",
      dataClass: "config",
    },
  },
  confirmOverrideAction: { scope: "tools:manage", page: "/tools", fields: { server: "matrix-nowhere", tool: "none", overrideId: NOWHERE } },
  draftSkillAction: {
    scope: "skills:manage",
    page: "/skills/new",
    fields: {
      fingerprint: "0".repeat(64),
      name: "matrixNobody",
      description: "matrix",
      bind: "0",
      "argName-0": "matrix",
      inputSchema: "{}",
      inputSchemaOriginal: "{}",
    },
  },
  replaySkillAction: { scope: "skills:manage", page: `/skills/${NOWHERE}`, fields: { versionId: NOWHERE } },
  reviewSkillAction: {
    scope: "skills:review",
    page: `/skills/${NOWHERE}`,
    fields: { versionId: NOWHERE, verdict: "reject", contentDigest: "0".repeat(64), comment: "matrix" },
  },
  proposeStandingAction: {
    scope: "skills:manage",
    page: `/skills/${NOWHERE}`,
    fields: {
      skillVersionId: NOWHERE,
      agents: "matrix-no-such-agent",
      bounds: '{"type":"object"}',
      notAfter: "2999-01-01T00:00",
      maxUses: "1",
      reason: "matrix",
    },
  },
  confirmStandingAction: { scope: "skills:manage", page: "/skills", fields: { id: NOWHERE } },
  revokeStandingAction: { scope: "skills:manage", page: "/skills", fields: { id: NOWHERE } },
};
/** Actions open to anyone by design: signing in, and signing out (the console layout's inline action). */
export const OPEN_ACTIONS = new Set([
  "app/(auth)/login/actions.ts#loginAction",
  "app/(auth)/login/actions.ts#oidcLoginAction",
  "app/(console)/layout.tsx#$$RSC_SERVER_ACTION_0",
]);

export type ManifestAction = { id: string; file: string; name: string };

export function manifestActions(): ManifestAction[] {
  const manifest = JSON.parse(readFileSync(".next/server/server-reference-manifest.json", "utf8")) as {
    node: Record<string, { filename: string; exportedName: string }>;
  };
  return Object.entries(manifest.node).map(([id, entry]) => ({ id, file: entry.filename, name: entry.exportedName }));
}

const { encodeReply } = createRequire(import.meta.url)("next/dist/compiled/react-server-dom-turbopack/client.node.js") as {
  encodeReply: (value: unknown) => Promise<FormData | string>;
};

/** Calls a server action as the browser does; the answer is the RSC text of its result. */
export async function callAction(
  baseURL: string,
  id: string,
  entry: Pick<ActionEntry, "page" | "fields" | "previousOnly"> & { args?: unknown[] },
  headers: Record<string, string>,
): Promise<{ status: number; text: string }> {
  const form = new FormData();
  for (const [name, value] of Object.entries(entry.fields)) for (const item of [value].flat()) form.append(name, item);
  const body = await encodeReply(entry.args ?? (entry.previousOnly ? [{ error: null, last: null }] : [null, form]));
  const response = await fetch(`${baseURL}${entry.page}`, {
    method: "POST",
    redirect: "manual",
    headers: { "Next-Action": id, Accept: "text/x-component", Origin: baseURL, ...headers },
    body,
  });
  return { status: response.status, text: await response.text() };
}

/** The session cookie of a person signed in through the login page. */
export async function sessionCookie(browser: Browser, baseURL: string, email: string, password: string): Promise<string> {
  const context = await browser.newContext({ baseURL });
  const login = new LoginPage(await context.newPage());
  await login.goto();
  await login.signIn(email, password);
  await login.page.waitForURL((url) => url.pathname === "/");
  const cookie = (await context.cookies()).map((c) => `${c.name}=${c.value}`).join("; ");
  await context.close();
  return cookie;
}
