-- Hand-written: "Run"."stats" held stats, logs, flags and artifacts; it is renamed to what it
-- holds, "execution". A rename keeps every row (a generated diff would drop and re-add it).
ALTER TABLE "Run" RENAME COLUMN "stats" TO "execution";

-- The search document reads the logs from the renamed column.
CREATE OR REPLACE FUNCTION "run_search_vector_refresh"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' OR NEW."searchVector" IS NULL
     OR NEW."code" IS DISTINCT FROM OLD."code"
     OR NEW."purpose" IS DISTINCT FROM OLD."purpose"
     OR NEW."result" IS DISTINCT FROM OLD."result"
     OR NEW."error" IS DISTINCT FROM OLD."error"
     OR NEW."execution" IS DISTINCT FROM OLD."execution" THEN
    NEW."searchVector" := "run_search_document"(
      NEW."code", NEW."purpose", NEW."result", NEW."error", NEW."execution",
      (SELECT string_agg("comment", ' ' ORDER BY "createdAt") FROM "Review" WHERE "runId" = NEW."id"));
  END IF;
  RETURN NEW;
END;
$$;
