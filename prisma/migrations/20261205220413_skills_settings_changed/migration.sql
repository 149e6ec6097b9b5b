-- Published skills are remembered like the published policy (lib/db/remembered.ts): every
-- committed change to the skills or their versions is announced on airlock_settings_changed.
CREATE TRIGGER "Skill_settings_changed"
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "Skill"
  FOR EACH STATEMENT EXECUTE FUNCTION "settings_changed_notify"();

CREATE TRIGGER "SkillVersion_settings_changed"
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "SkillVersion"
  FOR EACH STATEMENT EXECUTE FUNCTION "settings_changed_notify"();
