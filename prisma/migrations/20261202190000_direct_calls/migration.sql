-- The direct lane (call_tool): a run is a script, or one direct call of a tool accepted as
-- read-only (lib/intake/direct.ts), executed without a sandbox (lib/runs/executor.ts). The kind is
-- set when the run is inserted and never changes: the executor decides on it how the run executes.
CREATE TYPE "RunKind" AS ENUM ('script', 'direct');

ALTER TABLE "Run" ADD COLUMN "kind" "RunKind" NOT NULL DEFAULT 'script';

CREATE FUNCTION "run_kind_write_once"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'run %: its kind (%) is set when it is submitted and never changes', OLD."id", OLD."kind"
    USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER "Run_kind_write_once"
  BEFORE UPDATE OF "kind" ON "Run"
  FOR EACH ROW WHEN (NEW."kind" IS DISTINCT FROM OLD."kind")
  EXECUTE FUNCTION "run_kind_write_once"();
