/**
 * Values read from PostgreSQL, remembered in this process until PostgreSQL says they changed, so
 * a hot path does not read them again each time: `memoryUntilAnnounced`, the mechanism, and the
 * settings that change rarely on it (`listenSettingsChanges`: which policy version is published,
 * the published skills). Agent tokens use the same mechanism (lib/auth/token-cache.ts).
 *
 * Guarantees of a memory:
 * - a value is used only while this process listens on the memory's channel (./listener.ts), on
 *   which triggers announce the committed changes it depends on. Any announcement, forged ones
 *   included, forgets every value; so does losing the connection, and nothing is remembered until
 *   it is back;
 * - a read that began before an announcement is not remembered (its epoch is taken before the
 *   read): a value read just before a change committed is used by that caller only;
 * - a value is used at most MAX_AGE_MS after its read began; at most MAX_ENTRIES are kept, the
 *   oldest forgotten first.
 * Settings: announced on `airlock_settings_changed` by every committed insert, update, delete or
 * truncate of "PolicyVersion" (migration 20261205215554_settings_changed_notify), "Skill" and
 * "SkillVersion" (20261205220413_skills_settings_changed); a setting is frozen, deeply, remembered
 * or not, since every later caller may get the same object.
 *
 * A change made elsewhere is seen here when its announcement arrives, milliseconds after its
 * commit; a caller that started before then may still decide on the value as before it, as it
 * would have had it read a moment earlier.
 */
import { listen, type ListenerOptions } from "./listener";

const SETTINGS_CHANNEL = "airlock_settings_changed";
export const MAX_AGE_MS = 60_000;
const MAX_ENTRIES = 10_000;

/** When a read began: the count of announcements seen then, and the time. */
export type Epoch = { changes: number; at: number };

export type Memory<V> = {
  /** The value remembered under `key`, read less than MAX_AGE_MS before `now`. */
  get(key: string, now?: number): V | undefined;
  /** Taken before a read: what `set` needs. Null while nothing may be remembered. */
  epoch(): Epoch | null;
  /** Remembers a value read since `since`, unless anything was announced since. */
  set(since: Epoch | null, key: string, value: V): void;
  delete(key: string): void;
  close(): Promise<void>;
};

export function memoryUntilAnnounced<V>(options: ListenerOptions): Memory<V> {
  const values = new Map<string, { value: V; readAt: number }>();
  let changes = 0;
  const forget = () => {
    changes++;
    values.clear();
  };
  const listener = listen(options, { onNotification: forget, onUp: forget, onDown: forget });
  return {
    get(key, now = Date.now()) {
      const kept = values.get(key);
      if (!kept) return undefined;
      if (listener.listening() && now - kept.readAt < MAX_AGE_MS) return kept.value;
      values.delete(key);
      return undefined;
    },
    epoch: () => (listener.listening() ? { changes, at: Date.now() } : null),
    set(since, key, value) {
      if (since === null || since.changes !== changes || !listener.listening()) return;
      values.delete(key);
      if (values.size >= MAX_ENTRIES) values.delete(values.keys().next().value!);
      values.set(key, { value, readAt: since.at });
    },
    delete: (key) => void values.delete(key),
    async close() {
      await listener.close();
      forget();
    },
  };
}

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
  const memory = memoryUntilAnnounced<unknown>({
    connectionString,
    channel: SETTINGS_CHANNEL,
    applicationName: "airlock-settings-changes",
    whileDown: "settings are read every time until it is back",
  });
  return {
    async read<T>(key: string, load: () => Promise<T>): Promise<T> {
      const kept = memory.get(key);
      if (kept !== undefined) return kept as T;
      const since = memory.epoch();
      // Frozen whether remembered or not, so no caller's behaviour depends on the timing of a change.
      const value = deepFreeze(await load());
      memory.set(since, key, value);
      return value;
    },
    close: () => memory.close(),
  };
}
