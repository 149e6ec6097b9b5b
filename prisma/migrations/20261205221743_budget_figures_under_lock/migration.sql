-- The budgets' figures over an agent's runs (lib/intake/submit.ts budgetFigures), and, with
-- p_lock, the agent's budget lock taken first, in one round trip: intake's transaction took the
-- lock and then read the figures in two. The function is VOLATILE, so under READ COMMITTED its
-- query takes its snapshot after the lock is held, and sees every run a submission that held the
-- lock before committed. The status list in the WHERE must stay the predicate of
-- "Run_agentId_open_idx" (migration 20261203142757_budget_figures_by_index).
CREATE FUNCTION "airlock_budget_figures"(
  p_agent uuid, p_lock boolean, p_code_sha256 text, p_hour_ago timestamptz, p_loop_start timestamptz,
  p_in_flight text[], p_pending text[], p_failed text[], p_default_cpu_seconds numeric)
RETURNS TABLE ("lastHour" int, active int, pending int, failures int, "usedMs" float8, "reservedMs" float8)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, public, pg_temp AS $$
#variable_conflict use_column
BEGIN
  IF p_lock THEN
    PERFORM pg_advisory_xact_lock(hashtext('budget:' || p_agent::text));
  END IF;
  RETURN QUERY
    SELECT
      count(*) FILTER (WHERE r."createdAt" >= p_hour_ago)::int,
      count(*) FILTER (WHERE r.status::text = ANY(p_in_flight))::int,
      count(*) FILTER (WHERE r.status::text = ANY(p_pending))::int,
      count(*) FILTER (WHERE r."codeSha256" = p_code_sha256 AND r.status::text = ANY(p_failed) AND r."createdAt" >= p_loop_start)::int,
      -- Finished runs count what they used; runs in flight reserve their whole CPU limit.
      COALESCE(SUM((r.execution->>'cpuMs')::numeric)
        FILTER (WHERE NOT r.status::text = ANY(p_in_flight) AND r."finishedAt" >= now() - interval '1 day'), 0)::float8,
      COALESCE(SUM(COALESCE((r.limits->>'cpuSeconds')::numeric, p_default_cpu_seconds) * 1000)
        FILTER (WHERE r.status::text = ANY(p_in_flight)), 0)::float8
    FROM "Run" r
    WHERE r."agentId" = p_agent
      AND (r."createdAt" >= LEAST(p_hour_ago, p_loop_start)
        OR r.status IN ('auto_approved', 'approved', 'queued', 'running', 'previewing', 'pending_review', 'pending_release')
        OR r."finishedAt" >= now() - interval '1 day');
END;
$$;
