/**
 * Optional review notifications: when AIRLOCK_REVIEW_WEBHOOK_URL is set, a
 * Slack-compatible incoming-webhook message `{text, blocks}` is posted when a run is escalated
 * to review and when a reviewer decides.
 *
 * Guarantees: the message carries a link to the run page and a summary — agent, purpose (cut to
 * 200 characters, controls removed, Slack markup escaped), decision, approvals — and never the
 * code, inputs, results or reviewer comments. Sending is best effort: failures and timeouts (5 s)
 * are logged without the webhook URL (it is a secret) and never throw, so a decision or a
 * submission never fails because a chat service is down.
 */
import type { Db } from "@/lib/db";
import { prisma } from "@/lib/db";
import { consoleBaseUrl, env } from "@/lib/env";
import { sanitizeText } from "@/lib/untrusted/sanitize";

export type SlackMessage = { text: string; blocks?: { type: "section"; text: { type: "mrkdwn"; text: string } }[] };

const TIMEOUT_MS = 5_000;

function escapeMrkdwn(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

function summaryLine(text: string, max = 200): string {
  const flat = sanitizeText(text, 10_000).replace(/\s+/g, " ").trim();
  return escapeMrkdwn(flat.length > max ? `${flat.slice(0, max - 1)}…` : flat);
}

export async function postWebhook(message: SlackMessage): Promise<boolean> {
  const url = env().AIRLOCK_REVIEW_WEBHOOK_URL;
  if (!url) return false;
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(message),
      signal: AbortSignal.timeout(TIMEOUT_MS),
      redirect: "error",
    });
    if (!response.ok) {
      console.error(`review webhook: the receiver answered HTTP ${response.status}`);
      return false;
    }
    return true;
  } catch (error) {
    console.error(`review webhook: sending failed (${error instanceof Error ? error.name + ": " + error.message.replace(url, "<webhook>") : "unknown error"})`);
    return false;
  }
}

type RunSummary = { id: string; agent: string; purpose: string; status: string; approvalsRequired: number; approvals: number };

async function summarize(db: Db, runId: string): Promise<RunSummary | null> {
  const run = await db.run.findUnique({
    where: { id: runId },
    select: {
      id: true,
      purpose: true,
      status: true,
      approvalsRequired: true,
      agent: { select: { name: true } },
      reviews: { where: { verdict: "approve" }, select: { id: true } },
    },
  });
  if (!run) return null;
  return {
    id: run.id,
    agent: run.agent.name,
    purpose: run.purpose,
    status: run.status,
    approvalsRequired: run.approvalsRequired,
    approvals: run.reviews.length,
  };
}

export function buildMessage(kind: "escalated" | "decided", run: RunSummary, verdict?: string): SlackMessage {
  const link = `${consoleBaseUrl()}/runs/${run.id}`;
  const agent = summaryLine(run.agent, 100);
  const purpose = summaryLine(run.purpose);
  const approvals = `${run.approvals}/${Math.max(1, run.approvalsRequired)} approvals`;
  const headline =
    kind === "escalated"
      ? `Run from agent ${agent} needs review (${approvals})`
      : `Run from agent ${agent}: ${verdict ? verdict.replaceAll("_", " ") : "decision"} → ${run.status.replaceAll("_", " ")} (${approvals})`;
  const text = `${headline}: <${link}|open run>`;
  return {
    text,
    blocks: [{ type: "section", text: { type: "mrkdwn", text: `*${headline}*\nPurpose: ${purpose}\n<${link}|Open the run in Airlock>` } }],
  };
}

/** Tells the webhook that a run waits for review. Call after the submit transaction committed. Never throws. */
export async function notifyEscalation(runId: string, db: Db = prisma()): Promise<void> {
  try {
    if (!env().AIRLOCK_REVIEW_WEBHOOK_URL) return;
    const run = await summarize(db, runId);
    if (run && run.status === "pending_review") await postWebhook(buildMessage("escalated", run));
  } catch (error) {
    console.error(`review webhook: could not notify about run ${runId}`, error instanceof Error ? error.message : error);
  }
}

/** Tells the webhook about a reviewer's decision. Never throws. */
export async function notifyDecision(db: Db, decision: { runId: string; verdict: string }): Promise<void> {
  try {
    if (!env().AIRLOCK_REVIEW_WEBHOOK_URL) return;
    const run = await summarize(db, decision.runId);
    if (run) await postWebhook(buildMessage("decided", run, decision.verdict));
  } catch (error) {
    console.error(`review webhook: could not notify about run ${decision.runId}`, error instanceof Error ? error.message : error);
  }
}
