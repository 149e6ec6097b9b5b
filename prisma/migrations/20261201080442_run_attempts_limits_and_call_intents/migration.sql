-- AlterTable
ALTER TABLE "Run" ADD COLUMN     "attempt" INTEGER NOT NULL DEFAULT 1,
ADD COLUMN     "limits" JSONB;

-- AlterTable
ALTER TABLE "RunToolCall" ADD COLUMN     "readOnly" BOOLEAN NOT NULL DEFAULT false;

-- Hand-written: a tool call to a tool that is not read-only is recorded as "started" before it is
-- forwarded, and completed once afterwards. So RunToolCall stays append-only except for exactly
-- that: a row whose outcome is 'started' may be updated once to 'ok' or 'error', filling in the
-- result columns; what identifies the call (run, seq, server, tool, arguments) never changes.
-- Every other UPDATE, every DELETE and TRUNCATE are still refused. A completion written after the
-- run's terminal event would change the sealed outcome, which `airlock audit verify` reports.
CREATE OR REPLACE FUNCTION "run_tool_call_append_only"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'UPDATE' THEN
    RAISE EXCEPTION 'RunToolCall is append-only: % on "RunToolCall" is not allowed', TG_OP
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF OLD."outcome" = 'started'
     AND NEW."outcome" IN ('ok', 'error')
     AND NEW."id" = OLD."id"
     AND NEW."runId" = OLD."runId"
     AND NEW."seq" = OLD."seq"
     AND NEW."server" = OLD."server"
     AND NEW."tool" = OLD."tool"
     AND NEW."argsDigest" = OLD."argsDigest"
     AND NEW."args" IS NOT DISTINCT FROM OLD."args"
     AND NEW."readOnly" = OLD."readOnly"
     AND NEW."at" = OLD."at" THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'RunToolCall is append-only: % on "RunToolCall" is not allowed', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END;
$$;
