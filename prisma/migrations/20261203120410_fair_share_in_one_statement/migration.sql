-- Hand-written: fair share's decisions (lib/runs/fair-share.ts) in one statement each.
-- Taking a slot was a transaction of four round trips (begin, the slots' lock, the decision,
-- commit) and giving one back five; the decision's statement was also planned again on every
-- call (about 1 ms here). A PL/pgSQL function takes the lock and then decides, each of its queries
-- on a snapshot taken after the lock was granted (VOLATILE, READ COMMITTED), so what other
-- executors committed under the lock is seen exactly as before; its plans are generic (they
-- depend on no parameter's value), made once per connection and cached. The lock is transaction-scoped: called in a transaction, it is held until that
-- transaction ends (intake stores the run under it); called alone, until the statement ends.
-- Liveness is judged at the statement's time, not the caller's transaction's (which may have
-- waited for a lock).

-- 1. The decision for one queued run, under the slots' lock: a stored run (new_run_agent NULL),
--    whose slot is taken here when it is `held`; or a run intake is storing in the caller's
--    transaction (its agent given), which nothing holds or awaits a slot for yet, and whose slot the
--    caller inserts after the run: `gone` when the executor is not registered (pruned while its
--    heartbeat stalled), so the caller queues the run instead. No row when a stored run does not exist.
CREATE FUNCTION "airlock_take_slot"(run_id uuid, executor_id uuid, new_run_agent uuid, live_seconds integer)
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
  IF d.outcome = 'held' AND new_run_agent IS NULL THEN
    INSERT INTO "RunSlot" ("runId", "executorId") VALUES (run_id, executor_id)
    ON CONFLICT ("runId") DO UPDATE SET "executorId" = EXCLUDED."executorId", since = statement_timestamp();
  END IF;
  RETURN QUERY SELECT d.status, d."agentId", d."heldElsewhere", d.waiting, d.slots, d.share, d.held, d."othersWait", d.wake, d.outcome;
END;
$$;

-- 2. Gives a run's slot back under the slots' lock; returns the queued runs waiting for a slot, oldest first.
CREATE FUNCTION "airlock_release_slot"(run_id uuid, executor_id uuid)
RETURNS SETOF uuid
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, public, pg_temp SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(7231004420);
  DELETE FROM "RunSlot" WHERE "runId" = run_id AND "executorId" = executor_id;
  RETURN QUERY
    SELECT w."runId" FROM "RunSlot" w JOIN "Run" r ON r.id = w."runId"
    WHERE w."executorId" IS NULL AND r.status = 'queued'
    ORDER BY w.since, w."runId";
END;
$$;
