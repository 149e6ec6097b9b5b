/**
 * Tool pinning: the hash an admin trusts for each upstream tool. A tool seen for the first time
 * is pinned (trust on first use); a tool whose description/schemas/annotations hash differs from
 * its pin is quarantined by the broker until `accept` re-pins it. The PinStore interface lets the
 * database back it later; JsonFilePinStore writes a JSON file atomically (temp file + rename).
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

export interface PinStore {
  get(server: string, tool: string): Promise<string | undefined>;
  set(server: string, tool: string, hash: string): Promise<void>;
}

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
