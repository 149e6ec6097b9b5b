-- AlterEnum
ALTER TYPE "RunStatus" ADD VALUE 'check_failed';
ALTER TYPE "RunStatus" ADD VALUE 'pending_release';
ALTER TYPE "RunStatus" ADD VALUE 'withheld';

-- AlterTable
ALTER TABLE "Run" ADD COLUMN     "releaseDecision" JSONB,
ADD COLUMN     "releaseExpiresAt" TIMESTAMPTZ(3),
ADD COLUMN     "releasedAt" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "ResultRelease" (
    "id" UUID NOT NULL,
    "runId" UUID NOT NULL,
    "reviewerId" UUID NOT NULL,
    "comment" TEXT NOT NULL,
    "resultDigest" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ResultRelease_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "ResultRelease_runId_reviewerId_key" ON "ResultRelease"("runId", "reviewerId");

-- AddForeignKey
ALTER TABLE "ResultRelease" ADD CONSTRAINT "ResultRelease_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ResultRelease" ADD CONSTRAINT "ResultRelease_reviewerId_fkey" FOREIGN KEY ("reviewerId") REFERENCES "User"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- Hand-written. check_failed and withheld are terminal; a value cannot be used in the transaction
-- that adds it, so the SQL that lists terminal statuses compares text (migration 20261202100000's
-- functions name them).
--
-- A release is a record, never changed or deleted.
CREATE FUNCTION "result_release_append_only"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ResultRelease is append-only: % on "ResultRelease" is not allowed', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER "ResultRelease_no_update_delete"
  BEFORE UPDATE OR DELETE ON "ResultRelease"
  FOR EACH ROW EXECUTE FUNCTION "result_release_append_only"();

CREATE TRIGGER "ResultRelease_no_truncate"
  BEFORE TRUNCATE ON "ResultRelease"
  FOR EACH STATEMENT EXECUTE FUNCTION "result_release_append_only"();

-- "Run"."releasedAt" is set once (NULL → a time), only for a check_failed run or one whose result
-- policy held (pending_release), and only by a transaction that also appends its
-- run.result_released event (checked at commit).
CREATE FUNCTION "run_release_once"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF OLD."releasedAt" IS NOT NULL OR NEW."releasedAt" IS NULL OR OLD."status"::text NOT IN ('check_failed', 'pending_release') THEN
    RAISE EXCEPTION 'run %: a result is released once, only for a check_failed or pending_release run', OLD."id" USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER "Run_release_once"
  BEFORE UPDATE OF "releasedAt" ON "Run"
  FOR EACH ROW WHEN (OLD."releasedAt" IS DISTINCT FROM NEW."releasedAt") EXECUTE FUNCTION "run_release_once"();

CREATE FUNCTION "run_release_audited"() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
  IF NOT "airlock_event_in_this_transaction"('run.result_released', NEW."id"::text, 'released', 'true'::jsonb) THEN
    RAISE EXCEPTION 'run %: its result was released without a run.result_released event in the same transaction', NEW."id"
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NULL;
END;
$$;

CREATE CONSTRAINT TRIGGER "Run_release_audited"
  AFTER UPDATE OF "releasedAt" ON "Run" DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN (OLD."releasedAt" IS DISTINCT FROM NEW."releasedAt") EXECUTE FUNCTION "run_release_audited"();
