/**
 * Tool pinning: the hash admins trust for each upstream tool. The broker asks `get` for each tool
 * it lists: a hash different from the tool's quarantines it until `accept` re-pins it; `undefined`
 * lets the broker pin the tool as it is (`set`). Airlock keeps its pins in the database (DbPinStore,
 * lib/broker/db-registry.ts), for the server and the CLI alike; there `undefined` is answered only
 * for the first listing of the servers of the first start, and a tool nobody accepted gets
 * NEVER_ACCEPTED, so a tool an upstream adds later is quarantined until two admins accept it.
 */

export interface PinStore {
  get(server: string, tool: string): Promise<string | undefined>;
  set(server: string, tool: string, hash: string): Promise<void>;
  /** The accepted hashes of these tools, by `server.tool`, in one read (tools without one are left out); `get` each when absent. */
  pinnedMany?(tools: readonly { server: string; tool: string }[]): Promise<Map<string, string>>;
}

/** The pin of a tool no one accepted: never equal to a definition's hash, so the tool is quarantined. */
export const NEVER_ACCEPTED = "never-accepted";
