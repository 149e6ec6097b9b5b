-- Hand-written: what an agent did with a run's result (record_outcome, lib/runs/outcome.ts).
-- Each outcome is a row linked to its run and its agent, written in the transaction of its audit
-- event (run.outcome_recorded, which carries the same action, detail and id), so the chain holds
-- it; the row is what the run page shows. Rows are never changed or deleted.
CREATE TABLE "RunOutcome" (
    "id" UUID NOT NULL,
    "runId" UUID NOT NULL,
    "agentId" UUID NOT NULL,
    "action" TEXT NOT NULL,
    "detail" TEXT,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "RunOutcome_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "RunOutcome_action" CHECK ("action" IN ('answered_user', 'passed_to_tool', 'discarded', 'other')),
    CONSTRAINT "RunOutcome_detail_length" CHECK (char_length("detail") <= 2000)
);

CREATE INDEX "RunOutcome_runId_at_idx" ON "RunOutcome"("runId", "at");

ALTER TABLE "RunOutcome" ADD CONSTRAINT "RunOutcome_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "RunOutcome" ADD CONSTRAINT "RunOutcome_agentId_fkey" FOREIGN KEY ("agentId") REFERENCES "Agent"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

CREATE FUNCTION "run_outcome_append_only"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'RunOutcome is append-only: % on "RunOutcome" is not allowed', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER "RunOutcome_no_update_delete"
  BEFORE UPDATE OR DELETE ON "RunOutcome"
  FOR EACH ROW EXECUTE FUNCTION "run_outcome_append_only"();

CREATE TRIGGER "RunOutcome_no_truncate"
  BEFORE TRUNCATE ON "RunOutcome"
  FOR EACH STATEMENT EXECUTE FUNCTION "run_outcome_append_only"();
