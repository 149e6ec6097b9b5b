/**
 * Reads of settings that change rarely (which policy version is published, the published skills), remembered in this
 * process until PostgreSQL says they changed, so a run's path does not read them again each time.
 *
 * Guarantees:
 * - a remembered value is used only while this process listens on `airlock_settings_changed`
 *   (./listener.ts), on which a trigger announces every committed insert, update, delete or
 *   truncate of a table a remembered read depends on (migrations 20261205215554_settings_changed_notify,
 *   "PolicyVersion", and 20261205220413_skills_settings_changed, "Skill" and "SkillVersion"). Any
 *   announcement, forged ones included, forgets every value; so does
 *   losing the connection, and nothing is remembered until it is back;
 * - a read that began before an announcement is not remembered: a value read just before a change
 *   committed is used by that caller only;
 * - a value is used at most MAX_AGE_MS after its read began;
 * - a value is frozen, deeply, remembered or not, since every later caller may get the same object.
 *
 * A change made elsewhere is seen here when its announcement arrives, milliseconds after its
 * commit; a caller that started before then may still decide on the value as before it, as it
 * would have had it read a moment earlier.
 */
import { listen } from "./listener";

export const SETTINGS_CHANNEL = "airlock_settings_changed";
export const MAX_AGE_MS = 60_000;

export type Remembered = {
  /** The value under `key`: remembered, or `load`ed (and remembered when nothing changed meanwhile). */
  read<T>(key: string, load: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
};

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}

export function listenSettingsChanges(connectionString: string): Remembered {
  const values = new Map<string, { value: unknown; readAt: number }>();
  let changes = 0;
  const forget = () => {
    changes++;
    values.clear();
  };
  const listener = listen(
    { connectionString, channel: SETTINGS_CHANNEL, applicationName: "airlock-settings-changes", whileDown: "settings are read every time until it is back" },
    { onNotification: forget, onUp: forget, onDown: forget },
  );
  return {
    async read<T>(key: string, load: () => Promise<T>): Promise<T> {
      const kept = values.get(key);
      if (kept && listener.listening() && Date.now() - kept.readAt < MAX_AGE_MS) return kept.value as T;
      const since = changes;
      const readAt = Date.now();
      // Frozen whether remembered or not, so no caller's behaviour depends on the timing of a change.
      const value = deepFreeze(await load());
      if (since === changes && listener.listening()) values.set(key, { value, readAt });
      return value;
    },
    async close() {
      await listener.close();
      forget();
    },
  };
}
