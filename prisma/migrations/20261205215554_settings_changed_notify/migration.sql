-- Every committed change to the policy versions is announced on the channel
-- airlock_settings_changed, so a process that remembers which version is published forgets it at
-- once (lib/db/remembered.ts). The payload names the table; a listener forgets everything anyway.
CREATE FUNCTION "settings_changed_notify"() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
  PERFORM pg_notify('airlock_settings_changed', TG_TABLE_NAME);
  RETURN NULL;
END;
$$;

CREATE TRIGGER "PolicyVersion_settings_changed"
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "PolicyVersion"
  FOR EACH STATEMENT EXECUTE FUNCTION "settings_changed_notify"();
