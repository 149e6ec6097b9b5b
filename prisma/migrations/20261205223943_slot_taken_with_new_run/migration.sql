-- A run intake stores with its slot (lib/runs/fair-share.ts takeSlotAtIntake) had the slot's row
-- inserted by a statement of its own after the run's, for its foreign key: one more round trip in
-- intake's transaction. The key is now checked when the transaction commits (DEFERRABLE INITIALLY
-- DEFERRED), so airlock_take_slot inserts the slot of a new run it decides `held` itself, before
-- the run's row exists in that transaction; a transaction that does not then store the run fails at
-- commit, and leaves nothing. Otherwise the function is as in 20261203120410_fair_share_in_one_statement.
ALTER TABLE "RunSlot" ALTER CONSTRAINT "RunSlot_runId_fkey" DEFERRABLE INITIALLY DEFERRED;

CREATE OR REPLACE FUNCTION "airlock_take_slot"(run_id uuid, executor_id uuid, new_run_agent uuid, live_seconds integer)
RETURNS TABLE (status text, "agentId" uuid, "heldElsewhere" boolean, waiting boolean, slots integer, share integer, held integer, "othersWait" boolean, wake text[], outcome text)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, public, pg_temp SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
DECLARE
  d record;
BEGIN
  PERFORM pg_advisory_xact_lock(7231004420);
  WITH live AS (
    SELECT s."runId", r."agentId" FROM "RunSlot" s
    JOIN "Executor" e ON e.id = s."executorId"
    JOIN "Run" r ON r.id = s."runId"
    WHERE e."heartbeatAt" > statement_timestamp() - make_interval(secs => live_seconds) AND r.status IN ('queued', 'running')
  ),
  fair AS (
    SELECT c.slots, GREATEST(1, c.slots / 2) AS share
    FROM (SELECT COALESCE(SUM(x.slots), 0)::int AS slots FROM "Executor" x WHERE x."heartbeatAt" > statement_timestamp() - make_interval(secs => live_seconds)) c
  ),
  subject AS (
    SELECT r.id, r.status::text AS status, r."agentId" FROM "Run" r WHERE new_run_agent IS NULL AND r.id = run_id
    UNION ALL
    SELECT run_id, 'queued', new_run_agent WHERE new_run_agent IS NOT NULL
  ),
  state AS (
    SELECT r.status, r."agentId",
      EXISTS (SELECT 1 FROM live WHERE live."runId" = r.id) AS "heldElsewhere",
      EXISTS (SELECT 1 FROM "RunSlot" w WHERE w."runId" = r.id AND w."executorId" IS NULL) AS waiting,
      fair.slots, fair.share,
      (SELECT count(*)::int FROM live WHERE live."agentId" = r."agentId") AS held,
      EXISTS (
        SELECT 1 FROM "Run" o
        WHERE o.status = 'queued' AND o."agentId" <> r."agentId"
          AND NOT EXISTS (SELECT 1 FROM live WHERE live."runId" = o.id)
          AND (SELECT count(*) FROM live WHERE live."agentId" = o."agentId") < fair.share
      ) AS "othersWait",
      ARRAY(
        SELECT w."runId"::text FROM "RunSlot" w JOIN "Run" q ON q.id = w."runId"
        WHERE w."executorId" IS NULL AND q.status = 'queued' AND q."agentId" IS DISTINCT FROM r."agentId"
        ORDER BY w.since, w."runId"
      ) AS wake
    FROM subject r CROSS JOIN fair
  )
  SELECT state.*, CASE
      WHEN state.status <> 'queued' OR state."heldElsewhere" THEN 'gone'
      WHEN new_run_agent IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "Executor" x WHERE x.id = executor_id) THEN 'gone'
      WHEN state.held >= state.share AND state."othersWait" THEN 'deferred'
      ELSE 'held' END AS outcome
    INTO d FROM state;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  IF d.outcome = 'held' THEN
    INSERT INTO "RunSlot" ("runId", "executorId") VALUES (run_id, executor_id)
    ON CONFLICT ("runId") DO UPDATE SET "executorId" = EXCLUDED."executorId", since = statement_timestamp();
  END IF;
  RETURN QUERY SELECT d.status, d."agentId", d."heldElsewhere", d.waiting, d.slots, d.share, d.held, d."othersWait", d.wake, d.outcome;
END;
$$;
