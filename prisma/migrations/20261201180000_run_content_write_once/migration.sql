-- Hand-written: the content of a run that people read is write-once (docs/audit.md, "Run content").
-- Each field's digest is in the audit event of the write that set it (lib/audit/run-content.ts), and
-- `airlock audit verify` compares the row with those digests. This trigger stops the app itself
-- (and any role without the right to switch triggers off) from changing a field after that event:
-- - code, language, purpose, provenance and inputs are set when the row is inserted and never change;
-- - javascript, limits, plan, result, error and execution may change once, from NULL to a value,
--   and only while the run has not ended (a terminal event digests result, error and execution,
--   written or not).
-- The one further change to allow later is retention: a payload column set to NULL together with
-- a "purgedAt" time, by a SECURITY DEFINER function that records it; nothing else.
CREATE FUNCTION "run_content_write_once"() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  ended boolean := OLD."status"::text IN ('succeeded', 'failed', 'timed_out', 'cancelled', 'denied', 'rejected', 'changes_requested', 'expired');
  changed text[] := ARRAY[]::text[];
BEGIN
  IF NEW."code" IS DISTINCT FROM OLD."code" THEN changed := changed || 'code'::text; END IF;
  IF NEW."language" IS DISTINCT FROM OLD."language" THEN changed := changed || 'language'::text; END IF;
  IF NEW."purpose" IS DISTINCT FROM OLD."purpose" THEN changed := changed || 'purpose'::text; END IF;
  IF NEW."provenance" IS DISTINCT FROM OLD."provenance" THEN changed := changed || 'provenance'::text; END IF;
  IF NEW."inputs" IS DISTINCT FROM OLD."inputs" THEN changed := changed || 'inputs'::text; END IF;
  IF NEW."javascript" IS DISTINCT FROM OLD."javascript" AND (OLD."javascript" IS NOT NULL OR ended) THEN changed := changed || 'javascript'::text; END IF;
  IF NEW."limits" IS DISTINCT FROM OLD."limits" AND (OLD."limits" IS NOT NULL OR ended) THEN changed := changed || 'limits'::text; END IF;
  IF NEW."plan" IS DISTINCT FROM OLD."plan" AND (OLD."plan" IS NOT NULL OR ended) THEN changed := changed || 'plan'::text; END IF;
  IF NEW."result" IS DISTINCT FROM OLD."result" AND (OLD."result" IS NOT NULL OR ended) THEN changed := changed || 'result'::text; END IF;
  IF NEW."error" IS DISTINCT FROM OLD."error" AND (OLD."error" IS NOT NULL OR ended) THEN changed := changed || 'error'::text; END IF;
  IF NEW."execution" IS DISTINCT FROM OLD."execution" AND (OLD."execution" IS NOT NULL OR ended) THEN changed := changed || 'execution'::text; END IF;
  IF cardinality(changed) > 0 THEN
    RAISE EXCEPTION 'run content is write-once: % of run % cannot change (status %)', array_to_string(changed, ', '), OLD."id", OLD."status"
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER "Run_content_write_once"
  BEFORE UPDATE OF "code", "language", "purpose", "provenance", "inputs", "javascript", "limits", "plan", "result", "error", "execution" ON "Run"
  FOR EACH ROW EXECUTE FUNCTION "run_content_write_once"();
