-- Hand-written: what compliance reads of a run besides its content is a record too (docs/audit.md,
-- "Run record"). The app role could rewrite who approved a run and what policy decided, and the
-- compliance views showed the forgery:
-- - a review is append-only, and written only with its run.reviewed event (same run, same
--   reviewer, same verdict) in the same transaction (checked at commit);
-- - what intake stored with the run never changes after the insert (its agent is already
--   write-once): code hash, digests, idempotency key, creation time; and what it decided (decision,
--   reasons, approvals required, reviewer role, policy version and request, capability set,
--   findings, facts, skills, standing approval) never changes once the run has left submitted and
--   analyzed, the states before a decision, to which no run ever goes back. Intake writes them all
--   in its one insert; the states before a decision are for a run written step by step.
-- `airlock audit verify` also compares these with the events (lib/audit/run-record.ts), so a change
-- made behind the triggers is named too.

-- One append-only rule for every record table, naming the table it refuses: Review uses it, and
-- the three tables that had a copy each (RunOutcome, ResultRelease, RunArtifact) now share it.
CREATE FUNCTION "airlock_append_only"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only: % on "%" is not allowed', TG_TABLE_NAME, TG_OP, TG_TABLE_NAME
    USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER "Review_no_update_delete"
  BEFORE UPDATE OR DELETE ON "Review"
  FOR EACH ROW EXECUTE FUNCTION "airlock_append_only"();

CREATE TRIGGER "Review_no_truncate"
  BEFORE TRUNCATE ON "Review"
  FOR EACH STATEMENT EXECUTE FUNCTION "airlock_append_only"();

DROP TRIGGER "RunOutcome_no_update_delete" ON "RunOutcome";
DROP TRIGGER "RunOutcome_no_truncate" ON "RunOutcome";
CREATE TRIGGER "RunOutcome_no_update_delete" BEFORE UPDATE OR DELETE ON "RunOutcome" FOR EACH ROW EXECUTE FUNCTION "airlock_append_only"();
CREATE TRIGGER "RunOutcome_no_truncate" BEFORE TRUNCATE ON "RunOutcome" FOR EACH STATEMENT EXECUTE FUNCTION "airlock_append_only"();
DROP FUNCTION "run_outcome_append_only"();

DROP TRIGGER "ResultRelease_no_update_delete" ON "ResultRelease";
DROP TRIGGER "ResultRelease_no_truncate" ON "ResultRelease";
CREATE TRIGGER "ResultRelease_no_update_delete" BEFORE UPDATE OR DELETE ON "ResultRelease" FOR EACH ROW EXECUTE FUNCTION "airlock_append_only"();
CREATE TRIGGER "ResultRelease_no_truncate" BEFORE TRUNCATE ON "ResultRelease" FOR EACH STATEMENT EXECUTE FUNCTION "airlock_append_only"();
DROP FUNCTION "result_release_append_only"();

DROP TRIGGER "RunArtifact_append_only" ON "RunArtifact";
DROP TRIGGER "RunArtifact_no_truncate" ON "RunArtifact";
CREATE TRIGGER "RunArtifact_append_only" BEFORE UPDATE OR DELETE ON "RunArtifact" FOR EACH ROW EXECUTE FUNCTION "airlock_append_only"();
CREATE TRIGGER "RunArtifact_no_truncate" BEFORE TRUNCATE ON "RunArtifact" FOR EACH STATEMENT EXECUTE FUNCTION "airlock_append_only"();
DROP FUNCTION "run_artifact_append_only"();

-- "An event of this transaction", the one rule the commit-time checks share, may also name the
-- actor it must be by (a review's event is the reviewer's). Its callers keep calling it with four
-- arguments.
DROP FUNCTION "airlock_event_in_this_transaction"(text, text, text, jsonb);
CREATE FUNCTION "airlock_event_in_this_transaction"(p_action text, p_subject text, p_key text, p_contains jsonb, p_actor text DEFAULT NULL) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $$
  SELECT EXISTS (SELECT 1 FROM "AuditPending" e
                  WHERE e."action" = p_action AND e."subjectId" = p_subject AND (p_actor IS NULL OR e."actorId" = p_actor)
                    AND e.xmin = pg_current_xact_id()::xid AND e."data" -> p_key @> p_contains)
      OR EXISTS (SELECT 1 FROM "AuditEvent" e
                  WHERE e."action" = p_action AND e."subjectId" = p_subject AND (p_actor IS NULL OR e."actorId" = p_actor)
                    AND e.xmin = pg_current_xact_id()::xid AND e."data" -> p_key @> p_contains)
$$;

CREATE FUNCTION "review_audited"() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
  IF NOT "airlock_event_in_this_transaction"('run.reviewed', NEW."runId"::text, 'verdict', to_jsonb(NEW."verdict"::text), NEW."reviewerId"::text) THEN
    RAISE EXCEPTION 'run %: a review by % was written without its run.reviewed event in the same transaction', NEW."runId", NEW."reviewerId"
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NULL;
END;
$$;

CREATE CONSTRAINT TRIGGER "Review_audited"
  AFTER INSERT ON "Review" DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION "review_audited"();

CREATE FUNCTION "run_record_write_once"() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  changed text[] := ARRAY[]::text[];
  undecided boolean := OLD."status"::text IN ('submitted', 'analyzed');
BEGIN
  IF NEW."status" IS DISTINCT FROM OLD."status" AND NEW."status"::text IN ('submitted', 'analyzed')
     AND NOT (OLD."status"::text = 'submitted' AND NEW."status"::text = 'analyzed') THEN
    changed := changed || 'status'::text;
  END IF;
  IF NEW."codeSha256" IS DISTINCT FROM OLD."codeSha256" THEN changed := changed || 'codeSha256'::text; END IF;
  IF NEW."inputsDigest" IS DISTINCT FROM OLD."inputsDigest" THEN changed := changed || 'inputsDigest'::text; END IF;
  IF NEW."requestDigest" IS DISTINCT FROM OLD."requestDigest" THEN changed := changed || 'requestDigest'::text; END IF;
  IF NEW."idempotencyKey" IS DISTINCT FROM OLD."idempotencyKey" THEN changed := changed || 'idempotencyKey'::text; END IF;
  IF NEW."createdAt" IS DISTINCT FROM OLD."createdAt" THEN changed := changed || 'createdAt'::text; END IF;
  IF undecided THEN
    IF cardinality(changed) > 0 THEN
      RAISE EXCEPTION 'a run''s record is write-once: % of run % cannot change', array_to_string(changed, ', '), OLD."id"
        USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
  END IF;
  IF NEW."decision" IS DISTINCT FROM OLD."decision" THEN changed := changed || 'decision'::text; END IF;
  IF NEW."decisionReasons" IS DISTINCT FROM OLD."decisionReasons" THEN changed := changed || 'decisionReasons'::text; END IF;
  IF NEW."approvalsRequired" IS DISTINCT FROM OLD."approvalsRequired" THEN changed := changed || 'approvalsRequired'::text; END IF;
  IF NEW."reviewerRole" IS DISTINCT FROM OLD."reviewerRole" THEN changed := changed || 'reviewerRole'::text; END IF;
  IF NEW."policyVersionId" IS DISTINCT FROM OLD."policyVersionId" THEN changed := changed || 'policyVersionId'::text; END IF;
  IF NEW."policyRequest" IS DISTINCT FROM OLD."policyRequest" THEN changed := changed || 'policyRequest'::text; END IF;
  IF NEW."capabilitySet" IS DISTINCT FROM OLD."capabilitySet" THEN changed := changed || 'capabilitySet'::text; END IF;
  IF NEW."findings" IS DISTINCT FROM OLD."findings" THEN changed := changed || 'findings'::text; END IF;
  IF NEW."facts" IS DISTINCT FROM OLD."facts" THEN changed := changed || 'facts'::text; END IF;
  IF NEW."skills" IS DISTINCT FROM OLD."skills" THEN changed := changed || 'skills'::text; END IF;
  IF NEW."standingApprovalId" IS DISTINCT FROM OLD."standingApprovalId" THEN changed := changed || 'standingApprovalId'::text; END IF;
  IF cardinality(changed) > 0 THEN
    RAISE EXCEPTION 'a run''s record is write-once: % of run % cannot change', array_to_string(changed, ', '), OLD."id"
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER "Run_record_write_once"
  BEFORE UPDATE OF "codeSha256", "inputsDigest", "requestDigest", "idempotencyKey", "decision", "decisionReasons", "approvalsRequired",
                   "reviewerRole", "policyVersionId", "policyRequest", "capabilitySet", "findings", "facts", "skills", "standingApprovalId", "createdAt", "status" ON "Run"
  FOR EACH ROW EXECUTE FUNCTION "run_record_write_once"();
