-- A release does not change a run's status any other way than its own: a check_failed run stays
-- check_failed, a pending_release one ends succeeded.
CREATE OR REPLACE FUNCTION "run_release_once"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF OLD."releasedAt" IS NOT NULL OR NEW."releasedAt" IS NULL OR OLD."status"::text NOT IN ('check_failed', 'pending_release')
     OR NEW."status"::text <> (CASE OLD."status"::text WHEN 'pending_release' THEN 'succeeded' ELSE 'check_failed' END) THEN
    RAISE EXCEPTION 'run %: a result is released once, only for a check_failed run (which stays check_failed) or a pending_release one (which ends succeeded)', OLD."id"
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NEW;
END;
$$;

-- A held result reaches its agent only by a release: pending_release → succeeded sets releasedAt.
CREATE FUNCTION "run_held_until_released"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'run %: a held result (pending_release) ends succeeded only when reviewers release it (releasedAt)', OLD."id"
    USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER "Run_held_until_released"
  BEFORE UPDATE OF "status" ON "Run"
  FOR EACH ROW WHEN (OLD."status"::text = 'pending_release' AND NEW."status"::text = 'succeeded' AND NEW."releasedAt" IS NULL)
  EXECUTE FUNCTION "run_held_until_released"();
