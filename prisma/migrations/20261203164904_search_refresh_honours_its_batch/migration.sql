-- Hand-written: airlock_search_refresh(p_max, p_all) builds at most p_max documents, whatever
-- plan PostgreSQL picks. It chose its batch with `WHERE id IN (SELECT … LIMIT p_max FOR UPDATE)`.
-- On a table whose statistics predate a bulk insert, that was planned as a nested-loop semi join
-- which re-ran the locking subquery once per owed run, each re-run passing over what the statement
-- had just built: one call built EVERY owed document (asked for 100 of 1,000, it built all 1,000),
-- so a caller stepping through a backlog in batches was held for all of it. The batch is now
-- picked once (an ARRAY subquery is an InitPlan, run a single time) and its runs are updated by
-- their ids. Rows another transaction is building are still waited for (FOR UPDATE) and, once it
-- commits, rechecked and passed over for the next owed run, so none is built twice.
CREATE OR REPLACE FUNCTION "airlock_search_refresh"(p_max integer, p_all boolean) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
  built integer;
BEGIN
  IF p_max IS NULL OR p_max < 1 OR p_max > 10000 THEN
    RAISE EXCEPTION 'airlock_search_refresh: a batch is 1 to 10000 runs (got %)', p_max USING ERRCODE = 'invalid_parameter_value';
  END IF;
  UPDATE "Run" r SET "searchVector" = coalesce("run_search_build"(r), ''::tsvector)
  WHERE r."id" = ANY (ARRAY(
      SELECT o."id" FROM "Run" o
      WHERE o."searchVector" IS NULL AND (p_all OR o."status" NOT IN ('queued', 'running'))
      ORDER BY o."id" LIMIT p_max FOR UPDATE))
    AND r."searchVector" IS NULL;
  GET DIAGNOSTICS built = ROW_COUNT;
  RETURN built;
END;
$$;
