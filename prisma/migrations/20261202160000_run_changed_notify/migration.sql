-- Every change of a run's status is announced on the channel airlock_run_changed with the run's id,
-- delivered when its transaction commits, so waits for a run end at once (lib/runs/run-changes.ts).
CREATE FUNCTION "run_changed_notify"() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
  PERFORM pg_notify('airlock_run_changed', NEW."id"::text);
  RETURN NULL;
END;
$$;

CREATE TRIGGER "Run_changed_notify"
  AFTER UPDATE OF "status" ON "Run"
  FOR EACH ROW WHEN (OLD."status" IS DISTINCT FROM NEW."status") EXECUTE FUNCTION "run_changed_notify"();
