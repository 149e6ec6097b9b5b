-- A tool call's arguments and result are stored as the canonical JSON text their digests cover
-- (lib/runs/call-recorder.ts): `json` keeps the text as written, where `jsonb` rewrote it, so
-- verification (lib/audit/verify.ts) hashes the stored text and parses only what does not match
-- (rows written before this migration, in jsonb's form, and the size cap's marker).
-- AlterTable
ALTER TABLE "RunToolCall" ALTER COLUMN "args" SET DATA TYPE JSON USING "args"::json,
ALTER COLUMN "result" SET DATA TYPE JSON USING "result"::json;

-- `json` has no equality: the append-only trigger (20261202100000, section 5) compares the
-- arguments as text, which for `json` is the stored text itself, so not a byte of them may change.
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
       AND NEW."args"::text IS NOT DISTINCT FROM OLD."args"::text
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
