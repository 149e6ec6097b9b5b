/**
 * A run's record against its events (docs/audit.md, "Run record"): what compliance reads of a run
 * besides its content — that it was submitted, by which agent, with which code hash, what policy
 * decided, who reviewed it and how, and where it stands — must be what the audit chain says.
 *
 * `findRecordMismatch(db)` looks, in PostgreSQL, for the first of:
 * - a run with no `run.submitted` event (a row no submission wrote), or one whose agent or code
 *   hash is not the one its `run.submitted` event names;
 * - a run whose decision, approvals required or reviewer role (events record it since 2026-12-05)
 *   differ from its decision event (the first event carrying `decision` and `policyVersion`), or
 *   whose policy version is not that event's, or whose capability set, facts or findings (their
 *   codes) are not run.analyzed's, or whose skills are not run.submitted's; the decision's reasons
 *   are compared with the digest that event carries by verify.ts, which reads the row anyway;
 * - a run whose status is not the one its latest state event moved it to;
 * - a review with no `run.reviewed` event by the same reviewer with the same verdict and comment,
 *   and a `run.reviewed` event whose review is gone.
 * Events still staged in "AuditPending" count (one statement: one snapshot of both tables), so a
 * run written while verification runs is not reported. Runs whose submission predates the code
 * hash in events are compared on what their events carry.
 *
 * The database already refuses the app role these changes (migration run_record_write_once); this
 * names one made behind the triggers. Read-only.
 */
import type { Db } from "@/lib/db";
import { REQUEUED_ACTION, RUN_STATUSES } from "@/lib/contracts/run-states";

export type RecordMismatch = {
  runId: string;
  field:
    | "events"
    | "agentId"
    | "codeSha256"
    | "skills"
    | "decision"
    | "decisionReasons"
    | "approvalsRequired"
    | "reviewerRole"
    | "policyVersion"
    | "capabilitySet"
    | "facts"
    | "findings"
    | "status"
    | "reviews";
  detail: string;
};

/** The audit action of each state, as lib/contracts/run-states.ts `statusOfAction` reads them. */
const STATE_ACTIONS = [...RUN_STATUSES.map((status) => [`run.${status}`, status] as const), [REQUEUED_ACTION, "queued"] as const];

export async function findRecordMismatch(db: Db): Promise<RecordMismatch | null> {
  const actions = STATE_ACTIONS.map(([action]) => action);
  const statuses = STATE_ACTIONS.map(([, status]) => status);
  // Set-based: each kind of event read once, in one pass over the log, and hash-joined to the runs
  // (a lookup per run through the subject index took 45 s over a million events). The staged
  // events are grouped the same way; a staged state is newer than any chained one.
  const [run] = await db.$queryRaw<{ id: string; field: RecordMismatch["field"]; found: string | null; recorded: string | null }[]>`
    WITH states AS (
      SELECT * FROM unnest(${actions}::text[], ${statuses}::text[]) AS s(action, status)
    ), submitted AS (
      SELECT DISTINCT ON ("subjectId") "subjectId" AS id, "actorType" = 'agent' AS "byAgent", "actorId" AS "submittedBy", data ->> 'codeSha256' AS "submittedSha",
        coalesce(data -> 'skills', '[]'::jsonb) AS "submittedSkills"
      FROM "AuditEvent" WHERE action = 'run.submitted' AND "subjectType" = 'run' ORDER BY "subjectId", id
    ), decided AS (
      SELECT DISTINCT ON ("subjectId") "subjectId" AS id, data AS decided
      FROM "AuditEvent" WHERE "subjectType" = 'run' AND data ? 'decision' AND data ? 'policyVersion' ORDER BY "subjectId", id
    ), analyzed AS (
      SELECT DISTINCT ON ("subjectId") "subjectId" AS id, data -> 'capabilitySet' AS "capabilitySet", data -> 'facts' AS facts, data -> 'findings' AS "findingCodes"
      FROM "AuditEvent" WHERE action = 'run.analyzed' AND "subjectType" = 'run' ORDER BY "subjectId", id
    ), latest AS (
      SELECT DISTINCT ON (e."subjectId") e."subjectId" AS id, s.status
      FROM "AuditEvent" e JOIN states s ON s.action = e.action WHERE e."subjectType" = 'run' ORDER BY e."subjectId", e.id DESC
    ), staged AS (
      SELECT p."subjectId" AS id, bool_or(p.action = 'run.submitted') AS submitted,
             (array_agg(s.status ORDER BY p.id DESC) FILTER (WHERE s.status IS NOT NULL))[1] AS "latestState"
      FROM "AuditPending" p LEFT JOIN states s ON s.action = p.action
      WHERE p."subjectType" = 'run' GROUP BY p."subjectId"
    ), checked AS (
      SELECT r.id::text AS id, r.status::text AS status, r."agentId"::text AS agent, r."codeSha256" AS sha, r.decision::text AS decision,
             r."approvalsRequired" AS approvals, r."reviewerRole" AS "reviewerRole", r."capabilitySet" AS caps, a."capabilitySet" AS "analyzedCaps",
             r.facts, a.facts AS "analyzedFacts", a."findingCodes" AS "analyzedFindings", r.skills, sub."submittedSkills",
             (SELECT coalesce(jsonb_agg(f.finding -> 'code' ORDER BY f.n), '[]'::jsonb)
                FROM jsonb_array_elements(r.findings) WITH ORDINALITY AS f(finding, n)) AS "findingCodes",
             v.version AS "policyVersion",
             sub.id IS NOT NULL OR coalesce(st.submitted, false) AS submitted,
             sub."submittedBy", sub."byAgent", sub."submittedSha", d.decided,
             coalesce(st."latestState", l.status) AS "latestState"
      FROM "Run" r
      LEFT JOIN "PolicyVersion" v ON v.id = r."policyVersionId"
      LEFT JOIN submitted sub ON sub.id = r.id::text
      LEFT JOIN decided d ON d.id = r.id::text
      LEFT JOIN analyzed a ON a.id = r.id::text
      LEFT JOIN latest l ON l.id = r.id::text
      LEFT JOIN staged st ON st.id = r.id::text
    )
    SELECT id, field, found, recorded FROM (
      SELECT id, 'events' AS field, NULL AS found, NULL AS recorded, 1 AS rank FROM checked WHERE NOT submitted
      UNION ALL
      SELECT id, 'agentId', agent, "submittedBy", 2 FROM checked WHERE "byAgent" AND "submittedBy" IS DISTINCT FROM agent
      UNION ALL
      SELECT id, 'codeSha256', sha, "submittedSha", 3 FROM checked WHERE "submittedSha" IS NOT NULL AND "submittedSha" IS DISTINCT FROM sha
      UNION ALL
      SELECT id, 'skills', skills::text, "submittedSkills"::text, 3 FROM checked WHERE "submittedSkills" IS NOT NULL AND "submittedSkills" IS DISTINCT FROM skills
      UNION ALL
      SELECT id, 'decision', decision, decided ->> 'decision', 4 FROM checked WHERE decided IS NOT NULL AND decided ->> 'decision' IS DISTINCT FROM decision
      UNION ALL
      SELECT id, 'approvalsRequired', approvals::text, decided ->> 'approvalsRequired', 5 FROM checked
       WHERE jsonb_typeof(decided -> 'approvalsRequired') = 'number' AND (decided ->> 'approvalsRequired')::int IS DISTINCT FROM approvals
      UNION ALL
      SELECT id, 'reviewerRole', "reviewerRole", decided ->> 'reviewerRole', 6 FROM checked
       WHERE decided ? 'reviewerRole' AND (decided ->> 'reviewerRole') IS DISTINCT FROM "reviewerRole"
      UNION ALL
      SELECT id, 'capabilitySet', caps::text, "analyzedCaps"::text, 6 FROM checked
       WHERE "analyzedCaps" IS NOT NULL AND "analyzedCaps" IS DISTINCT FROM caps
      UNION ALL
      SELECT id, 'facts', facts::text, "analyzedFacts"::text, 6 FROM checked
       WHERE "analyzedFacts" IS NOT NULL AND "analyzedFacts" IS DISTINCT FROM facts
      UNION ALL
      SELECT id, 'findings', "findingCodes"::text, "analyzedFindings"::text, 6 FROM checked
       WHERE "analyzedFindings" IS NOT NULL AND "analyzedFindings" IS DISTINCT FROM "findingCodes"
      UNION ALL
      SELECT id, 'policyVersion', "policyVersion"::text, decided ->> 'policyVersion', 6 FROM checked
       WHERE decided IS NOT NULL AND (decided ->> 'policyVersion') IS DISTINCT FROM "policyVersion"::text
      UNION ALL
      SELECT id, 'status', status, "latestState", 7 FROM checked WHERE submitted AND "latestState" IS DISTINCT FROM status
    ) found ORDER BY rank, id LIMIT 1`;
  if (run) return mismatchOf(run);
  const [review] = await db.$queryRaw<{ runId: string; reviewerId: string; verdict: string }[]>`
    SELECT v."runId"::text AS "runId", v."reviewerId"::text AS "reviewerId", v.verdict::text AS verdict FROM "Review" v
    WHERE NOT EXISTS (
      SELECT 1 FROM "AuditEvent" e WHERE e."subjectType" = 'run' AND e."subjectId" = v."runId"::text AND e.action = 'run.reviewed'
        AND e."actorType" = 'user' AND e."actorId" = v."reviewerId"::text
        AND e.data ->> 'verdict' = v.verdict::text AND (e.data ->> 'comment') IS NOT DISTINCT FROM v.comment)
    AND NOT EXISTS (
      SELECT 1 FROM "AuditPending" e WHERE e."subjectType" = 'run' AND e."subjectId" = v."runId"::text AND e.action = 'run.reviewed'
        AND e."actorType" = 'user' AND e."actorId" = v."reviewerId"::text
        AND e.data ->> 'verdict' = v.verdict::text AND (e.data ->> 'comment') IS NOT DISTINCT FROM v.comment)
    ORDER BY v."runId", v."reviewerId" LIMIT 1`;
  if (review) {
    return {
      runId: review.runId,
      field: "reviews",
      detail: `run ${review.runId}: its review by user ${review.reviewerId} (${review.verdict}) is not the one any run.reviewed event records; the review was written or changed outside Airlock`,
    };
  }
  // The review events first, through the index on their action: ordered by id, the planner would
  // otherwise walk the whole log in id order looking for one.
  const [gone] = await db.$queryRaw<{ runId: string; reviewerId: string | null; eventId: bigint }[]>`
    WITH reviewed AS MATERIALIZED (
      SELECT id, "subjectId", "actorId" FROM "AuditEvent" WHERE action = 'run.reviewed' AND "subjectType" = 'run'
    )
    SELECT e."subjectId" AS "runId", e."actorId" AS "reviewerId", e.id AS "eventId" FROM reviewed e
    WHERE NOT EXISTS (SELECT 1 FROM "Review" v WHERE v."runId"::text = e."subjectId" AND v."reviewerId"::text = e."actorId")
    ORDER BY e.id LIMIT 1`;
  if (gone) {
    return {
      runId: gone.runId,
      field: "reviews",
      detail: `run ${gone.runId}: the review by user ${gone.reviewerId} that event #${gone.eventId} records is gone; the review was deleted outside Airlock`,
    };
  }
  return null;
}

function mismatchOf(row: { id: string; field: RecordMismatch["field"]; found: string | null; recorded: string | null }): RecordMismatch {
  const { id, field, found, recorded } = row;
  if (field === "events") return { runId: id, field, detail: `run ${id} has no run.submitted event: no submission wrote it` };
  return {
    runId: id,
    field,
    detail: `run ${id}: its ${field} is ${found ?? "null"}, but its events record ${recorded ?? "null"}; the row was changed outside Airlock`,
  };
}
