-- Hand-written: a run's search document is built once for the tool calls it makes while running,
-- by the write that ends its run, instead of once per batch of calls (each batch rebuilt the whole
-- document, parsing every call's text again: about 5–8 ms per batch, on the run's clock).
--
-- 1. A statement that inserts or updates tool calls leaves the documents of running runs alone.
CREATE OR REPLACE FUNCTION "run_tool_call_search_refresh"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE "Run" SET "searchVector" = NULL
  WHERE "id" IN (SELECT DISTINCT "runId" FROM changed_calls WHERE "seq" <= 200) AND "status" <> 'running';
  RETURN NULL;
END;
$$;

-- 2. A run leaving `running` (to its end, or back to the queue) has its document rebuilt, with
--    every call recorded by then, whatever else the write changes. Otherwise as in
--    20261202130000_search_identifiers.
CREATE OR REPLACE FUNCTION "run_search_vector_refresh"() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  comments text;
  calls text;
BEGIN
  IF TG_OP = 'INSERT' OR NEW."searchVector" IS NULL
     OR (OLD."status" = 'running' AND NEW."status" <> 'running')
     OR NEW."code" IS DISTINCT FROM OLD."code"
     OR NEW."purpose" IS DISTINCT FROM OLD."purpose"
     OR NEW."provenance" IS DISTINCT FROM OLD."provenance"
     OR NEW."result" IS DISTINCT FROM OLD."result"
     OR NEW."error" IS DISTINCT FROM OLD."error"
     OR NEW."execution" IS DISTINCT FROM OLD."execution" THEN
    comments := (SELECT string_agg("comment", ' ' ORDER BY "createdAt") FROM "Review" WHERE "runId" = NEW."id");
    calls := "run_tool_calls_search_text"(NEW."id");
    BEGIN
      NEW."searchVector" := "run_search_document"(
        NEW."code", NEW."purpose", NEW."provenance", NEW."result", NEW."error", NEW."execution", comments, calls, 1);
    EXCEPTION WHEN program_limit_exceeded THEN
      NEW."searchVector" := "run_search_document"(
        NEW."code", NEW."purpose", NEW."provenance", NEW."result", NEW."error", NEW."execution", comments, calls, 0.1);
    END;
  END IF;
  RETURN NEW;
END;
$$;
