-- Hand-written: a run's search document is no longer built by the writes on a run's own clock.
-- Building it at the insert (the code and purpose, parsed for identifiers) and again at the write
-- that ends the run took about 6 and 4.5 ms of PostgreSQL on the demo run, and while the run had a
-- document every update of its row (the claim, the heartbeats) re-inserted all its lexemes into
-- the GIN index (about 2.5 ms for the claim). Now a write that changes what the document covers
-- leaves it owed (NULL), and airlock_search_refresh() builds owed documents: every running
-- process's background pass within a moment (runs that are queued or running excepted, so it never
-- holds a row the executor is about to write), and every text search and run export, all owed
-- documents included, before it reads (lib/audit/search-refresh.ts). So no search misses a run.
--
-- 1. The document of a run as it stands (as 20261202235500_search_after_running built it).
CREATE FUNCTION "run_search_build"(r "Run") RETURNS tsvector
LANGUAGE plpgsql STABLE AS $$
DECLARE
  comments text;
  calls text;
BEGIN
  comments := (SELECT string_agg("comment", ' ' ORDER BY "createdAt") FROM "Review" WHERE "runId" = r."id");
  calls := "run_tool_calls_search_text"(r."id");
  BEGIN
    RETURN "run_search_document"(r."code", r."purpose", r."provenance", r."result", r."error", r."execution", comments, calls, 1);
  EXCEPTION WHEN program_limit_exceeded THEN
    RETURN "run_search_document"(r."code", r."purpose", r."provenance", r."result", r."error", r."execution", comments, calls, 0.1);
  END;
END;
$$;

-- 2. An insert, a run leaving `running` (its calls are indexed after it) and a change of any column
--    the document covers leave it owed. Any other write keeps the document it sets or had.
--    Review comments, tool calls and retention already set it to NULL (earlier migrations): owed.
CREATE OR REPLACE FUNCTION "run_search_vector_refresh"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT'
     OR (OLD."status" = 'running' AND NEW."status" <> 'running')
     OR NEW."code" IS DISTINCT FROM OLD."code"
     OR NEW."purpose" IS DISTINCT FROM OLD."purpose"
     OR NEW."provenance" IS DISTINCT FROM OLD."provenance"
     OR NEW."result" IS DISTINCT FROM OLD."result"
     OR NEW."error" IS DISTINCT FROM OLD."error"
     OR NEW."execution" IS DISTINCT FROM OLD."execution" THEN
    NEW."searchVector" := NULL;
  END IF;
  RETURN NEW;
END;
$$;

-- 3. The runs whose document is owed, found without a scan.
CREATE INDEX "Run_search_owed_idx" ON "Run" ("id") WHERE "searchVector" IS NULL;

-- 4. Builds up to p_max owed documents, of every run (p_all) or of runs neither queued nor running,
--    and returns how many. Rows another transaction is building are waited for, not skipped, and
--    not built twice: once it commits, their document is no longer NULL.
CREATE FUNCTION "airlock_search_refresh"(p_max integer, p_all boolean) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
  built integer;
BEGIN
  IF p_max IS NULL OR p_max < 1 OR p_max > 10000 THEN
    RAISE EXCEPTION 'airlock_search_refresh: a batch is 1 to 10000 runs (got %)', p_max USING ERRCODE = 'invalid_parameter_value';
  END IF;
  UPDATE "Run" r SET "searchVector" = coalesce("run_search_build"(r), ''::tsvector)
  WHERE r."id" IN (
      SELECT o."id" FROM "Run" o
      WHERE o."searchVector" IS NULL AND (p_all OR o."status" NOT IN ('queued', 'running'))
      ORDER BY o."id" LIMIT p_max FOR UPDATE)
    AND r."searchVector" IS NULL;
  GET DIAGNOSTICS built = ROW_COUNT;
  RETURN built;
END;
$$;

