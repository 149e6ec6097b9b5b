-- Hand-written: retention (docs/audit.md, "Retention"). A run's payloads are deleted when their
-- window ends — the digests stay, so the chain and the evidence of a purged run still verify — and
-- a legal hold stops that.
--
-- 1. What was purged: "Run"."purgedAt" (the latest purge) and "purged" ({field: time}); a tool
--    call's "purgedAt" (its args and result are NULL from then on).
ALTER TABLE "Run" ADD COLUMN "purgedAt" TIMESTAMPTZ(3),
ADD COLUMN "purged" JSONB NOT NULL DEFAULT '{}';

ALTER TABLE "RunToolCall" ADD COLUMN "purgedAt" TIMESTAMPTZ(3);

-- The job's candidates: runs whose longest window has not been applied yet (a fully purged run has
-- "code" in "purged"), by age. Partial, so the job never walks the runs it is done with; like the
-- search indexes, not modelled in schema.prisma.
CREATE INDEX "Run_retention_due_idx" ON "Run" ("createdAt", "id") WHERE NOT ("purged" ? 'code');

-- 2. Legal holds on a run or on every run of an agent, placed by a person with a reason. A hold
--    is never deleted: releasing it fills "releasedAt", "releasedBy" and "releaseReason", once.
CREATE TABLE "LegalHold" (
    "id" UUID NOT NULL,
    "runId" UUID,
    "agentId" UUID,
    "reason" TEXT NOT NULL,
    "placedBy" TEXT NOT NULL,
    "placedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "releasedAt" TIMESTAMPTZ(3),
    "releasedBy" TEXT,
    "releaseReason" TEXT,

    CONSTRAINT "LegalHold_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "LegalHold_one_subject" CHECK (("runId" IS NULL) <> ("agentId" IS NULL))
);

CREATE INDEX "LegalHold_runId_idx" ON "LegalHold"("runId");
CREATE INDEX "LegalHold_agentId_idx" ON "LegalHold"("agentId");

ALTER TABLE "LegalHold" ADD CONSTRAINT "LegalHold_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "LegalHold" ADD CONSTRAINT "LegalHold_agentId_fkey" FOREIGN KEY ("agentId") REFERENCES "Agent"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

CREATE FUNCTION "legal_hold_release_only"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE'
     AND OLD."releasedAt" IS NULL AND NEW."releasedAt" IS NOT NULL
     AND NEW."releasedBy" IS NOT NULL AND NEW."releaseReason" IS NOT NULL
     AND NEW."id" = OLD."id"
     AND NEW."runId" IS NOT DISTINCT FROM OLD."runId"
     AND NEW."agentId" IS NOT DISTINCT FROM OLD."agentId"
     AND NEW."reason" = OLD."reason"
     AND NEW."placedBy" = OLD."placedBy"
     AND NEW."placedAt" = OLD."placedAt" THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'a legal hold is never deleted or changed, only released once (% refused)', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER "LegalHold_release_only"
  BEFORE UPDATE OR DELETE ON "LegalHold"
  FOR EACH ROW EXECUTE FUNCTION "legal_hold_release_only"();

CREATE TRIGGER "LegalHold_no_truncate"
  BEFORE TRUNCATE ON "LegalHold"
  FOR EACH STATEMENT EXECUTE FUNCTION "legal_hold_release_only"();

-- 3. The one door: airlock_purge() runs as the owner of this schema (SECURITY DEFINER, fixed
--    search_path) and opens the door for its own update with a transaction-local setting. The
--    triggers accept a purge only when both hold: the setting is on AND current_user is the
--    owner of airlock_purge — the app role can set the setting (set_config is open to anyone) but
--    cannot become the owner, so only the function's own statements pass.
CREATE FUNCTION "airlock_purge_door_open"() RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $$
  SELECT coalesce(current_setting('airlock.purge_door', true), '') = 'open'
     AND current_user = (SELECT r.rolname FROM pg_proc p JOIN pg_roles r ON r.oid = p.proowner
                         WHERE p.proname = 'airlock_purge' AND p.pronamespace = 'public'::regnamespace)
$$;

-- The run fields retention may purge, and what a purged field holds: NULL, '' for the two text
-- columns that cannot be NULL, the provenance without its prompt and context, the execution
-- without its logs;
-- and 'artifacts', the bytes of the run's artifact blobs (migration 20261202120000_artifacts).
CREATE FUNCTION "airlock_purge"(p_run uuid, p_fields text[], p_calls integer[], p_as_of timestamptz, p_window_days integer)
RETURNS timestamptz
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
  run record;
  purged_at timestamptz := date_trunc('milliseconds', now());
  unknown text[];
  again text[];
  missing integer;
BEGIN
  IF p_as_of IS NULL OR p_as_of > now() THEN
    RAISE EXCEPTION 'airlock_purge: as of % is in the future', p_as_of USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF p_window_days IS NULL OR p_window_days < 1 THEN
    RAISE EXCEPTION 'airlock_purge: a retention window is at least one day (got %)', p_window_days USING ERRCODE = 'invalid_parameter_value';
  END IF;
  p_fields := coalesce(p_fields, ARRAY[]::text[]);
  p_calls := coalesce(p_calls, ARRAY[]::integer[]);
  IF cardinality(p_fields) = 0 AND cardinality(p_calls) = 0 THEN
    RAISE EXCEPTION 'airlock_purge: nothing to purge' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT array_agg(f) INTO unknown FROM unnest(p_fields) f
   WHERE f NOT IN ('code', 'purpose', 'javascript', 'provenance', 'result', 'error', 'execution', 'plan', 'artifacts');
  IF unknown IS NOT NULL THEN
    RAISE EXCEPTION 'airlock_purge: % cannot be purged', array_to_string(unknown, ', ') USING ERRCODE = 'invalid_parameter_value';
  END IF;

  SELECT r."id", r."agentId", r."status"::text AS status, r."purged", coalesce(r."finishedAt", r."updatedAt") AS ended
    INTO run FROM "Run" r WHERE r."id" = p_run FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'airlock_purge: no run %', p_run USING ERRCODE = 'no_data_found';
  END IF;
  IF run.status NOT IN ('succeeded', 'failed', 'timed_out', 'cancelled', 'denied', 'rejected', 'changes_requested', 'expired', 'check_failed', 'withheld') THEN
    RAISE EXCEPTION 'airlock_purge: run % has not ended (%)', p_run, run.status USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  IF run.ended > p_as_of - make_interval(hours => p_window_days * 24) THEN
    RAISE EXCEPTION 'airlock_purge: run % ended at %, inside its % day window as of %', p_run, run.ended, p_window_days, p_as_of
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  IF EXISTS (SELECT 1 FROM "LegalHold" h WHERE h."releasedAt" IS NULL AND (h."runId" = p_run OR h."agentId" = run."agentId")) THEN
    RAISE EXCEPTION 'airlock_purge: run % is under a legal hold', p_run USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  SELECT array_agg(f) INTO again FROM unnest(p_fields) f WHERE run.purged ? f;
  IF again IS NOT NULL THEN
    RAISE EXCEPTION 'airlock_purge: % of run % already purged', array_to_string(again, ', '), p_run USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  SELECT count(*) INTO missing FROM unnest(p_calls) s
   WHERE NOT EXISTS (SELECT 1 FROM "RunToolCall" c WHERE c."runId" = p_run AND c."seq" = s AND c."purgedAt" IS NULL);
  IF missing > 0 THEN
    RAISE EXCEPTION 'airlock_purge: % tool call(s) of run % are unknown or already purged', missing, p_run USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;

  PERFORM set_config('airlock.purge_door', 'open', true);
  IF cardinality(p_fields) > 0 THEN
    UPDATE "Run" SET
      "code" = CASE WHEN 'code' = ANY(p_fields) THEN '' ELSE "code" END,
      "purpose" = CASE WHEN 'purpose' = ANY(p_fields) THEN '' ELSE "purpose" END,
      "javascript" = CASE WHEN 'javascript' = ANY(p_fields) THEN NULL ELSE "javascript" END,
      "provenance" = CASE WHEN 'provenance' = ANY(p_fields) THEN "provenance" - 'prompt' - 'context' ELSE "provenance" END,
      "result" = CASE WHEN 'result' = ANY(p_fields) THEN NULL ELSE "result" END,
      "error" = CASE WHEN 'error' = ANY(p_fields) THEN NULL ELSE "error" END,
      "execution" = CASE WHEN 'execution' = ANY(p_fields) AND jsonb_typeof("execution") = 'object'
                         THEN jsonb_set("execution", '{logs}', '[]'::jsonb) ELSE "execution" END,
      "plan" = CASE WHEN 'plan' = ANY(p_fields) THEN NULL ELSE "plan" END,
      "purged" = "purged" || (SELECT jsonb_object_agg(f, to_char(purged_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) FROM unnest(p_fields) f),
      "purgedAt" = purged_at,
      -- NULL makes the search trigger rebuild the run's document from what is left.
      "searchVector" = NULL
    WHERE "id" = p_run;
  END IF;
  -- A run's artifacts: each blob it links goes when every run linking it has had its artifacts
  -- purged (a blob shared with a run still in its window, or held, stays).
  IF 'artifacts' = ANY(p_fields) THEN
    UPDATE "ArtifactBlob" b SET "bytes" = NULL, "purgedAt" = purged_at
     WHERE b."bytes" IS NOT NULL
       AND EXISTS (SELECT 1 FROM "RunArtifact" a WHERE a."sha256" = b."sha256" AND a."runId" = p_run)
       AND NOT EXISTS (SELECT 1 FROM "RunArtifact" a JOIN "Run" o ON o."id" = a."runId"
                        WHERE a."sha256" = b."sha256" AND NOT (o."purged" ? 'artifacts'));
  END IF;
  IF cardinality(p_calls) > 0 THEN
    UPDATE "RunToolCall" SET "args" = NULL, "result" = NULL, "purgedAt" = purged_at
     WHERE "runId" = p_run AND "seq" = ANY(p_calls);
  END IF;
  PERFORM set_config('airlock.purge_door', '', true);
  RETURN purged_at;
END;
$$;

REVOKE ALL ON FUNCTION "airlock_purge"(uuid, text[], integer[], timestamptz, integer) FROM PUBLIC;

-- 4. The write-once content trigger lets the door through, and nothing else may touch the purge
--    columns.
CREATE OR REPLACE FUNCTION "run_content_write_once"() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  ended boolean := OLD."status"::text IN ('succeeded', 'failed', 'timed_out', 'cancelled', 'denied', 'rejected', 'changes_requested', 'expired', 'check_failed', 'withheld');
  changed text[] := ARRAY[]::text[];
BEGIN
  IF "airlock_purge_door_open"() THEN
    RETURN NEW;
  END IF;
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
  IF NEW."purgedAt" IS DISTINCT FROM OLD."purgedAt" THEN changed := changed || 'purgedAt'::text; END IF;
  IF NEW."purged" IS DISTINCT FROM OLD."purged" THEN changed := changed || 'purged'::text; END IF;
  -- What a legal hold and a retention window are decided on: the run's agent never changes; its
  -- end is written once, by the transition that ends it; an ended run stays ended, and its
  -- updatedAt (the end of a run without finishedAt) never moves back.
  IF NEW."agentId" IS DISTINCT FROM OLD."agentId" THEN changed := changed || 'agentId'::text; END IF;
  IF NEW."finishedAt" IS DISTINCT FROM OLD."finishedAt" AND (OLD."finishedAt" IS NOT NULL OR ended) THEN changed := changed || 'finishedAt'::text; END IF;
  IF NEW."status" IS DISTINCT FROM OLD."status" AND ended THEN changed := changed || 'status'::text; END IF;
  IF NEW."updatedAt" < OLD."updatedAt" AND ended THEN changed := changed || 'updatedAt'::text; END IF;
  IF cardinality(changed) > 0 THEN
    RAISE EXCEPTION 'run content is write-once: % of run % cannot change (status %); only retention purges it, through airlock_purge()', array_to_string(changed, ', '), OLD."id", OLD."status"
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NEW;
END;
$$;

DROP TRIGGER "Run_content_write_once" ON "Run";
CREATE TRIGGER "Run_content_write_once"
  BEFORE UPDATE OF "code", "language", "purpose", "provenance", "inputs", "javascript", "limits", "plan", "result", "error", "execution", "purgedAt", "purged",
                   "agentId", "finishedAt", "status", "updatedAt" ON "Run"
  FOR EACH ROW EXECUTE FUNCTION "run_content_write_once"();

-- A run inserted already marked purged would show readers a purge that never happened.
CREATE FUNCTION "run_insert_unpurged"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW."purgedAt" IS NOT NULL OR NEW."purged" <> '{}'::jsonb THEN
    RAISE EXCEPTION 'a run is inserted unpurged' USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER "Run_insert_unpurged"
  BEFORE INSERT ON "Run"
  FOR EACH ROW EXECUTE FUNCTION "run_insert_unpurged"();

-- 5. RunToolCall stays append-only except completing a started call once (20261201080442) and,
--    through the door, purging its arguments and result.
CREATE OR REPLACE FUNCTION "run_tool_call_append_only"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NEW."purgedAt" IS NOT NULL THEN
      RAISE EXCEPTION 'a tool call is recorded unpurged' USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
  END IF;
  IF TG_OP <> 'UPDATE' THEN
    RAISE EXCEPTION 'RunToolCall is append-only: % on "RunToolCall" is not allowed', TG_OP
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF NEW."id" = OLD."id"
     AND NEW."runId" = OLD."runId"
     AND NEW."seq" = OLD."seq"
     AND NEW."server" = OLD."server"
     AND NEW."tool" = OLD."tool"
     AND NEW."argsDigest" = OLD."argsDigest"
     AND NEW."readOnly" = OLD."readOnly"
     AND NEW."at" = OLD."at" THEN
    IF OLD."outcome" = 'started'
       AND NEW."outcome" IN ('ok', 'error')
       AND NEW."args" IS NOT DISTINCT FROM OLD."args"
       AND NEW."purgedAt" IS NULL THEN
      RETURN NEW;
    END IF;
    IF "airlock_purge_door_open"()
       AND OLD."purgedAt" IS NULL AND NEW."purgedAt" IS NOT NULL
       AND NEW."args" IS NULL AND NEW."result" IS NULL
       AND NEW."outcome" = OLD."outcome"
       AND NEW."resultDigest" IS NOT DISTINCT FROM OLD."resultDigest"
       AND NEW."error" IS NOT DISTINCT FROM OLD."error"
       AND NEW."durationMs" = OLD."durationMs"
       AND NEW."phase" = OLD."phase" THEN
      RETURN NEW;
    END IF;
  END IF;
  RAISE EXCEPTION 'RunToolCall is append-only: % on "RunToolCall" is not allowed', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER "RunToolCall_insert_unpurged"
  BEFORE INSERT ON "RunToolCall"
  FOR EACH ROW EXECUTE FUNCTION "run_tool_call_append_only"();

-- 6. Every purge and every hold carries its audit event in the same transaction. Checked at commit
--    (deferred constraint triggers, which the app role can neither drop nor disable): new keys of
--    "Run"."purged" need a `run.purged` event of this transaction naming them in data.fields, a
--    purged tool call one naming its seq in data.purgedToolCalls, a hold placed or released its
--    `hold.placed` / `hold.released` event with its id. So neither the door nor a direct write
--    leaves a deletion or a release the log does not show.
CREATE FUNCTION "airlock_event_in_this_transaction"(p_action text, p_subject text, p_key text, p_contains jsonb) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $$
  SELECT EXISTS (SELECT 1 FROM "AuditEvent" e
                  WHERE e."action" = p_action AND e."subjectId" = p_subject
                    AND e.xmin = pg_current_xact_id()::xid AND e."data" -> p_key @> p_contains)
$$;

CREATE FUNCTION "run_purge_audited"() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
  added jsonb;
BEGIN
  SELECT coalesce(jsonb_agg(k), '[]'::jsonb) INTO added FROM jsonb_object_keys(NEW."purged") k WHERE NOT (OLD."purged" ? k);
  IF jsonb_array_length(added) > 0 AND NOT "airlock_event_in_this_transaction"('run.purged', NEW."id"::text, 'fields', added) THEN
    RAISE EXCEPTION 'run %: % purged without a run.purged event naming it in the same transaction', NEW."id", added
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NULL;
END;
$$;

CREATE CONSTRAINT TRIGGER "Run_purge_audited"
  AFTER UPDATE OF "purged" ON "Run" DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN (OLD."purged" IS DISTINCT FROM NEW."purged") EXECUTE FUNCTION "run_purge_audited"();

CREATE FUNCTION "run_tool_call_purge_audited"() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
  IF NOT "airlock_event_in_this_transaction"('run.purged', NEW."runId"::text, 'purgedToolCalls', jsonb_build_array(NEW."seq")) THEN
    RAISE EXCEPTION 'run %: tool call % purged without a run.purged event naming it in the same transaction', NEW."runId", NEW."seq"
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NULL;
END;
$$;

CREATE CONSTRAINT TRIGGER "RunToolCall_purge_audited"
  AFTER UPDATE OF "purgedAt" ON "RunToolCall" DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN (OLD."purgedAt" IS NULL AND NEW."purgedAt" IS NOT NULL) EXECUTE FUNCTION "run_tool_call_purge_audited"();

CREATE FUNCTION "legal_hold_audited"() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
  action text := CASE WHEN TG_OP = 'INSERT' THEN 'hold.placed' ELSE 'hold.released' END;
BEGIN
  IF NOT "airlock_event_in_this_transaction"(action, coalesce(NEW."runId", NEW."agentId")::text, 'holdId', to_jsonb(NEW."id"::text)) THEN
    RAISE EXCEPTION 'legal hold %: % without its % event in the same transaction', NEW."id", lower(TG_OP), action
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NULL;
END;
$$;

CREATE CONSTRAINT TRIGGER "LegalHold_audited"
  AFTER INSERT OR UPDATE ON "LegalHold" DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION "legal_hold_audited"();
