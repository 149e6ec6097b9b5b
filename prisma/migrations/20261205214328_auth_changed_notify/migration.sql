-- Every committed change to who a token authenticates as is announced on the channel
-- airlock_auth_changed, so a process that remembers accepted tokens forgets them at once
-- (lib/auth/token-cache.ts): an update of a token in anything but its last use, an update of an
-- agent, and a deleted or truncated row of either. The payload is empty: every entry is forgotten.
CREATE FUNCTION "auth_changed_notify"() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
  PERFORM pg_notify('airlock_auth_changed', '');
  RETURN NULL;
END;
$$;

CREATE TRIGGER "AgentToken_auth_changed_update"
  AFTER UPDATE ON "AgentToken"
  FOR EACH ROW WHEN ((to_jsonb(OLD) - 'lastUsedAt') IS DISTINCT FROM (to_jsonb(NEW) - 'lastUsedAt'))
  EXECUTE FUNCTION "auth_changed_notify"();

CREATE TRIGGER "AgentToken_auth_changed_delete"
  AFTER DELETE OR TRUNCATE ON "AgentToken"
  FOR EACH STATEMENT EXECUTE FUNCTION "auth_changed_notify"();

CREATE TRIGGER "Agent_auth_changed"
  AFTER UPDATE OR DELETE OR TRUNCATE ON "Agent"
  FOR EACH STATEMENT EXECUTE FUNCTION "auth_changed_notify"();
