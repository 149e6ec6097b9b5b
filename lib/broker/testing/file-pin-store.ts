/**
 * A PinStore over a JSON file, written atomically (temp file + rename), for the broker's own
 * tests, which run without a database and reconnect brokers to the same pins. Airlock itself pins
 * in the database (DbPinStore).
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { PinStore } from "@/lib/broker/pins";

export class JsonFilePinStore implements PinStore {
  constructor(private readonly file: string) {}

  private read(): Record<string, string> {
    try {
      const parsed = JSON.parse(readFileSync(this.file, "utf8")) as unknown;
      if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error(`${this.file} is not a JSON object`);
      return Object.assign(Object.create(null) as Record<string, string>, parsed);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return Object.create(null) as Record<string, string>;
      throw error;
    }
  }

  async get(server: string, tool: string): Promise<string | undefined> {
    const value = this.read()[`${server}.${tool}`];
    return typeof value === "string" ? value : undefined;
  }

  async set(server: string, tool: string, hash: string): Promise<void> {
    const pins = this.read();
    pins[`${server}.${tool}`] = hash;
    mkdirSync(dirname(this.file), { recursive: true });
    const tmp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(pins, Object.keys(pins).sort(), 2)}\n`);
    renameSync(tmp, this.file);
  }
}
