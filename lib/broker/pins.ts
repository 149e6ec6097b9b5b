/**
 * Tool pinning: the hash an admin trusts for each upstream tool. A tool seen for the first time
 * is pinned (trust on first use); a tool whose description/schemas/annotations hash differs from
 * its pin is quarantined by the broker until `accept` re-pins it. Airlock keeps its pins in the
 * database (DbPinStore, lib/broker/db-registry.ts), for the server and the CLI alike.
 */

export interface PinStore {
  get(server: string, tool: string): Promise<string | undefined>;
  set(server: string, tool: string, hash: string): Promise<void>;
}
