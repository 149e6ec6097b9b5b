/**
 * Audit events for reads and refusals: things that change nothing in the database but that
 * compliance must be able to see later — an actor refused for a missing scope, a person opening a
 * run in the console. (What agents read over MCP is recorded in lib/mcp/audit.ts.)
 *
 * Guarantees:
 * - each event is appended in its own short transaction (there is no change to commit with);
 * - a read event is written *before* the data is handed back: if it cannot be written the caller
 *   throws and the reader gets an error, not the data (as for the audit log's own reads);
 * - a refusal event never turns the refusal into something else: if it cannot be written, the
 *   failure is logged and the caller still answers "forbidden";
 * - data is small and never secret: scopes, door names, data classes, counts.
 */
import type { Actor } from "@/lib/contracts/scopes";
import type { Db } from "@/lib/db";
import { isAppError } from "@/lib/errors";
import { recordAudit } from "./record";

/**
 * Records `auth.forbidden {scope, door}` when `error` is a refusal of an authenticated actor
 * (AppError "forbidden": a scope it lacks — requireScope — or a rule such as "not your own agent's
 * run", then `scope` is null and `reason` says which); does nothing for any other error, or
 * without an actor. Never throws. `door` names where the attempt came in: `mcp:<tool or method>`,
 * `page`, `action`, `api:<path>`. The one helper every door calls.
 */
export async function recordForbidden(db: Db, actor: Actor | null | undefined, error: unknown, door: string): Promise<void> {
  if (!actor || !isAppError(error) || error.code !== "forbidden") return;
  const scope = typeof error.details?.scope === "string" ? error.details.scope : null;
  const reason = typeof error.details?.reason === "string" ? { reason: error.details.reason } : {};
  try {
    await db.$transaction((tx) =>
      recordAudit(tx, {
        actor,
        action: "auth.forbidden",
        subject: actor.type === "system" ? { type: "system", id: actor.name } : { type: actor.type, id: actor.id },
        data: { scope, door: door.slice(0, 200), ...reason },
      }),
    );
  } catch (cause) {
    console.error("could not record auth.forbidden", cause);
  }
}

/** How long one recorded view covers the live refreshes of the page it was recorded for (a session's lifetime). */
export const RUN_VIEW_COVERS_MS = 12 * 60 * 60 * 1000;

/**
 * True when a console request re-renders `pagePath` while the browser already shows it: the
 * router's refresh (`router.refresh()`, which the run page's live updates call) or a server
 * action's re-render. Next hides its own router headers from pages, so this reads what the
 * browser adds: such a request is a fetch (`Sec-Fetch-Mode` is not `navigate`) sent from the page
 * itself (`Referer` is `pagePath`). A page load or reload is a navigation, and a client-side
 * navigation comes from another page, so neither is a refresh. Headers are the client's word:
 * recordRunViewed trusts a "refresh" only when a view was recorded before.
 */
export function isPageRefresh(headers: Pick<Headers, "get">, pagePath: string): boolean {
  if (headers.get("sec-fetch-mode") === "navigate") return false;
  if (headers.get("next-action")) return true;
  const referer = headers.get("referer");
  if (!referer) return false;
  try {
    return new URL(referer).pathname === pagePath;
  } catch {
    return false;
  }
}

/**
 * Records `run.viewed` for one server render of a run's console page, before the page is handed
 * back. A live refresh of a page already on screen records nothing — but only when this person's
 * view of this run was recorded within RUN_VIEW_COVERS_MS, so a request dressed up as a refresh
 * can never read a run unaudited. Returns whether an event was written.
 */
/**
 * `personalData`: how many personal-data values the page shows in the clear that the run's agent
 * saw only as tokens (lib/runs/pii-tokens.ts) — recorded with the view, since the view reveals them.
 */
export async function recordRunViewed(
  db: Db,
  actor: Actor,
  runId: string,
  options: { refresh: boolean; status: string; personalData?: number },
): Promise<boolean> {
  const actorId = actor.type === "system" ? actor.name : actor.id;
  if (options.refresh) {
    const covered = await db.auditEvent.findFirst({
      where: {
        subjectType: "run",
        subjectId: runId,
        action: "run.viewed",
        actorType: actor.type,
        actorId,
        at: { gte: new Date(Date.now() - RUN_VIEW_COVERS_MS) },
      },
      select: { id: true },
    });
    if (covered) return false;
  }
  const data = options.personalData ? { status: options.status, personalData: options.personalData } : { status: options.status };
  await db.$transaction((tx) => recordAudit(tx, { actor, action: "run.viewed", subject: { type: "run", id: runId }, data }));
  return true;
}
