-- Plan preview: a run that changes state is first run as a dry run (status "previewing"); the
-- writes it intercepted become its plan, which reviewers approve and the apply must follow.
ALTER TYPE "RunStatus" ADD VALUE 'previewing' AFTER 'analyzed';

ALTER TABLE "Run" ADD COLUMN "plan" JSONB;

ALTER TABLE "RunToolCall" ADD COLUMN "phase" TEXT NOT NULL DEFAULT 'apply';
