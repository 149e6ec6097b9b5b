-- Hand-written: the release of a withheld result is searched as a review is. Its reason joins the
-- review comments in the run's search document, and a release leaves the document owed, as a
-- comment does (the person filter reads "ResultRelease" beside "Review": lib/audit/search.ts).
-- Before, a compliance officer searching a release's reason, or its reviewer, found nothing.

-- 1. The document of a run as it stands (20261203054804_search_built_after_the_run), with the
--    reasons of its releases after its review comments, each in the order given.
CREATE OR REPLACE FUNCTION "run_search_build"(r "Run") RETURNS tsvector
LANGUAGE plpgsql STABLE AS $$
DECLARE
  comments text;
  calls text;
BEGIN
  comments := concat_ws(' ',
    (SELECT string_agg("comment", ' ' ORDER BY "createdAt") FROM "Review" WHERE "runId" = r."id"),
    (SELECT string_agg("comment", ' ' ORDER BY "createdAt") FROM "ResultRelease" WHERE "runId" = r."id"));
  calls := "run_tool_calls_search_text"(r."id");
  BEGIN
    RETURN "run_search_document"(r."code", r."purpose", r."provenance", r."result", r."error", r."execution", comments, calls, 1);
  EXCEPTION WHEN program_limit_exceeded THEN
    RETURN "run_search_document"(r."code", r."purpose", r."provenance", r."result", r."error", r."execution", comments, calls, 0.1);
  END;
END;
$$;

-- 2. A release leaves its run's document owed (releases are never updated: ResultRelease is append-only).
CREATE FUNCTION "result_release_search_refresh"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE "Run" SET "searchVector" = NULL WHERE "id" = NEW."runId";
  RETURN NULL;
END;
$$;

CREATE TRIGGER "ResultRelease_comment_search"
  AFTER INSERT ON "ResultRelease"
  FOR EACH ROW EXECUTE FUNCTION "result_release_search_refresh"();

-- 3. Runs released before this migration: their documents are owed too.
UPDATE "Run" SET "searchVector" = NULL WHERE "id" IN (SELECT "runId" FROM "ResultRelease");
