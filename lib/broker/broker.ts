/**
 * The tool broker: Airlock's MCP client to the configured upstream servers.
 *
 * Guarantees:
 *  - an upstream that cannot be connected or listed fails the connect, naming it, or (`partial`, a
 *    server's runtime) is unavailable: its calls are refused saying so (why, its own error text,
 *    is for operators: `unavailableServers`), and it is tried again
 *    every UNAVAILABLE_RETRY_MS (`retryUnavailable`), its tools pin-checked as at a start;
 *  - each upstream's tools are listed at connect, within connectTimeoutMs in all and at most
 *    MAX_TOOL_PAGES pages, and again when it says they changed (notifications/tools/list_changed,
 *    `relistChanged`); each tool is pinned by
 *    sha256(canonical(description, inputSchema, outputSchema, annotations)); a tool whose hash
 *    differs from its pin, a tool name listed twice by one server, or a name that is not a plain
 *    tool name is QUARANTINED: calls are refused until an admin accepts it (`accept`);
 *  - an upstream whose connection is lost (one stdio frame over the SDK's cap closes it) is
 *    connected again at its next call, and used again only if it lists the very tools it started
 *    with;
 *  - every call is checked against the tool's inputSchema before it leaves the host, and every
 *    result is size-capped, depth-capped, copied into null-prototype objects and checked against
 *    the outputSchema before it reaches a script; an upstream `isError` result is a failed call;
 *  - what a call took and returned is recorded by its caller (lib/runs/executor.ts, with the
 *    digests of what it stores), not here;
 *  - credentials in the config (env, headers) are handed to the transport only;
 *  - agents are shown a tool (search, declarations) as `shownToAgents` makes it: a quarantined
 *    one by name and state only, an accepted one with credentials in its texts redacted.
 * Refuses: unknown tools, quarantined tools, invalid arguments, results that are too big, too
 * deep, not JSON-like or off-schema. Capability checks (which tools a run may call) belong to the
 * sandbox's RPC session; this module decides nothing about policy.
 */
import { createHash } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode, ListToolsResultSchema, McpError, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { toSafeJson, type JsonValue } from "@/lib/untrusted/safe-json";
import { sanitizeText } from "@/lib/untrusted/sanitize";
import { redactSecrets, redactSecretsInJson, redactSecretsInMessage } from "@/lib/untrusted/secrets";
import type { AirlockConfig, ServerConfig } from "./config";
import { previewHintsOf } from "@/lib/contracts/preview-hints";
import { compileToolSchema, issuesText, type SchemaCheck, type SchemaIssue } from "./schema-check";
import { generateDeclarations } from "./declarations";
import { NEVER_ACCEPTED, type PinStore } from "./pins";
import { effectOf, quarantineText, type ToolAnnotations } from "@/lib/contracts/tools";
import type { ToolInfo } from "./types";
import { canonicalJson } from "@/lib/canonical-json";
import { nearestName } from "@/lib/edit-distance";

export class ToolCallError extends Error {
  constructor(
    message: string,
    readonly outcome: "error" | "refused",
  ) {
    super(message);
    this.name = "ToolCallError";
  }
}

export class BrokerError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "BrokerError";
  }
}

export type BrokerLimits = { maxResultBytes: number; maxDepth: number; maxNodes: number; connectTimeoutMs: number; maxToolsPerServer: number };

export const DEFAULT_BROKER_LIMITS: BrokerLimits = {
  maxResultBytes: 4 * 1024 * 1024,
  maxDepth: 32,
  maxNodes: 500_000,
  connectTimeoutMs: 20_000,
  maxToolsPerServer: 1000,
};

const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
/** Pages of tools/list an upstream may answer with at connect. */
const MAX_TOOL_PAGES = 100;

export const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

export function toolHash(tool: { description?: unknown; inputSchema?: unknown; outputSchema?: unknown; annotations?: unknown; _meta?: unknown }): string {
  const preview = previewHintsOf(tool._meta);
  return sha256(
    canonicalJson({
      description: tool.description ?? "",
      inputSchema: tool.inputSchema ?? null,
      outputSchema: tool.outputSchema ?? null,
      annotations: tool.annotations ?? null,
      // What a preview answers and shows as money is part of what reviewers trust; a tool without
      // hints keeps the hash it had before hints existed.
      ...(preview ? { preview: { answer: preview.answer ?? null, money: preview.money } } : {}),
    }),
  );
}

/**
 * An upstream's text (an error, a schema check's issues, its stderr) as the broker may quote it,
 * at most `max` characters: cleaned, then credentials redacted, then cut. A cut first could end a
 * secret before the part that makes it recognizable (`postgres://app:password` without `@host`).
 */
function quoted(text: string, max: number): string {
  return redactSecretsInMessage(sanitizeText(text, Number.MAX_SAFE_INTEGER)).text.slice(0, max);
}

/** A connected upstream, and a reconnect under way. */
type Upstream = { name: string; config: ServerConfig; client: Client; transport: Transport; reconnecting?: Promise<void>; relisting?: boolean };

/** Clients whose upstream said its tools changed (notifications/tools/list_changed) since they were last listed. */
const listingChanged = new WeakSet<Client>();

/** An upstream that could not be connected or listed: why, and when it is tried again. */
type Unavailable = { config: ServerConfig; reason: string; retryAt: number; trying?: boolean };

/** Quarantines an admin's acceptance ends (a name collision is never accepted). */
const ACCEPTABLE = new Set<ToolInfo["quarantineReason"]>(["hash_changed", "new_tool"]);

/** How often an unavailable upstream is tried again (ToolBroker.retryUnavailable). */
export const UNAVAILABLE_RETRY_MS = 30_000;

/**
 * Whether the upstream's connection is gone. A stdio transport that hit the SDK's frame cap drops
 * its process at once (its pid is null from then on, and every send fails "Not connected") but
 * says it closed only once the old process exits, seconds later for one that ignores its stdin.
 */
function lost(upstream: Upstream): boolean {
  const { transport } = upstream;
  return transport instanceof StdioClientTransport ? transport.pid === null : upstream.client.transport === undefined;
}

function annotationsOf(raw: unknown): ToolAnnotations {
  const out: ToolAnnotations = {};
  if (!raw || typeof raw !== "object") return out;
  const a = raw as Record<string, unknown>;
  if (typeof a.title === "string") out.title = sanitizeText(a.title, 200);
  for (const hint of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"] as const) {
    if (typeof a[hint] === "boolean") out[hint] = a[hint];
  }
  return out;
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new BrokerError(`${what} timed out after ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

async function connectUpstream(name: string, config: ServerConfig, timeoutMs: number): Promise<Upstream> {
  let transport: Transport;
  let stderrTail = "";
  if (config.transport === "stdio") {
    const stdio = new StdioClientTransport({
      command: config.command,
      args: config.args,
      env: { ...getDefaultEnvironment(), ...config.env },
      cwd: config.cwd,
      stderr: "pipe",
    });
    stdio.stderr?.on("data", (chunk: Buffer) => {
      stderrTail = (stderrTail + chunk.toString("utf8")).slice(-4000);
    });
    transport = stdio;
  } else {
    transport = new StreamableHTTPClientTransport(new URL(config.url), { requestInit: { headers: config.headers } });
  }
  const client = new Client({ name: "airlock-broker", version: "0.1.0" });
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    listingChanged.add(client);
  });
  try {
    await withTimeout(client.connect(transport), timeoutMs, `connecting to upstream '${name}'`);
  } catch (cause) {
    await client.close().catch(() => undefined);
    const tail = quoted(stderrTail, 1000).trim();
    throw new BrokerError(`upstream '${name}' failed to connect: ${(cause as Error).message}${tail ? ` (stderr: ${tail})` : ""}`, { cause });
  }
  return { name, config, client, transport };
}

export type SearchDetail = "name" | "summary" | "full";

/** A tool found: its name, and at `summary` one line of what it does, what it may change and its data class. */
export type SearchHit = { server: string; name: string; summary?: string };

/** What a search answers: the tools, and at `full` one declaration of them all (descriptions, annotations and schemas as TypeScript and JSDoc). */
export type SearchAnswer = { tools: SearchHit[]; declaration?: string };

const EFFECT_LABEL: Record<ReturnType<typeof effectOf>, string> = { read_only: "read-only", write: "writes", destructive: "destructive" };

/**
 * `read-only, internal: List invoices, filtered by …` — the first sentence of the description, on
 * one line. A quarantined tool's effect and description are no admin's (shownToAgents), so it is
 * said to be quarantined and why, not what it claims to do.
 */
function summaryLine(tool: ToolInfo): string {
  if (tool.quarantined) return `quarantined, ${tool.dataClass}: calls are refused; ${quarantineText(tool.quarantineReason)}`;
  const first =
    sanitizeText(tool.description, 2_000)
      .replace(/\s+/g, " ")
      .trim()
      .split(/(?<=\.)\s/)[0] ?? "";
  const state = `${EFFECT_LABEL[effectOf(tool.annotations)]}, ${tool.dataClass}`;
  return first ? `${state}: ${first}` : state;
}

/**
 * What agents are shown of each tool, kept with it while what it is made from stands (declarations
 * are cached by identity): its quarantine, and its description, schemas, annotations and data
 * class, which an admin's override (./db-registry.ts) changes in place.
 */
const shown = new WeakMap<ToolInfo, { from: readonly unknown[]; view: ToolInfo }>();
// Annotations by value: an override writes a new object on every refresh.
const shownFrom = (tool: ToolInfo): readonly unknown[] => [
  tool.quarantined,
  tool.description,
  tool.inputSchema,
  tool.outputSchema,
  JSON.stringify(tool.annotations),
  tool.dataClass,
];

/**
 * A tool as agents are shown it (search_tools, and the declarations analysis checks scripts
 * against). A quarantined tool's definition is one no admin accepted, so of it only the name, the
 * data class and the quarantine are shown: its text would reach the model without the acceptance
 * its calls wait for. In an accepted one, a credential an upstream pasted into the description or
 * its schemas (a string or a key) is redacted, as in anything else an upstream sends.
 */
function shownToAgents(tool: ToolInfo): ToolInfo {
  const from = shownFrom(tool);
  const kept = shown.get(tool);
  if (kept && kept.from.every((part, i) => part === from[i])) return kept.view;
  const view: ToolInfo = tool.quarantined
    ? { ...tool, description: "", annotations: {}, inputSchema: { type: "object" }, outputSchema: null }
    : {
        ...tool,
        description: redactSecrets(tool.description).text,
        inputSchema: redacted(tool.inputSchema),
        outputSchema: tool.outputSchema && redacted(tool.outputSchema),
      };
  shown.set(tool, { from, view });
  return view;
}

/** A schema as agents are shown it: credentials redacted in its strings and keys, as in a tool's result. */
const redacted = (schema: Record<string, unknown>) => redactSecretsInJson(schema as JsonValue).value as Record<string, unknown>;

/** A tool's compiled schemas are its definition's: kept by name and hash, so a call racing a relist never checks against another definition. */
const validatorKey = (tool: ToolInfo): string => `${tool.server}.${tool.name}@${tool.hash}`;

export class ToolBroker {
  private readonly inputValidators = new Map<string, SchemaCheck | Error>();
  private readonly outputValidators = new Map<string, SchemaCheck | Error>();

  private closing = false;

  private constructor(
    private readonly upstreams: Map<string, Upstream>,
    private readonly registry: Map<string, ToolInfo>,
    private readonly unavailable: Map<string, Unavailable>,
    private readonly pins: PinStore,
    private readonly config: AirlockConfig,
    private readonly limits: BrokerLimits,
  ) {}

  /**
   * The upstream's client, connected again if its connection was lost (one frame over the SDK's
   * stdio cap closed it for every later call). It must list exactly the tools, by hash, the
   * broker holds for it: anything else is refused until a restart pins it as a start does.
   */
  private async connected(upstream: Upstream): Promise<Client> {
    if (!lost(upstream)) return upstream.client;
    if (this.closing) throw new ToolCallError(`upstream '${upstream.name}' is closed`, "error");
    upstream.reconnecting ??= (async () => {
      const fresh = await connectUpstream(upstream.name, upstream.config, this.limits.connectTimeoutMs);
      try {
        const listed = new Map((await ToolBroker.listAll(fresh, this.limits)).map((tool) => [tool.name, tool.hash]));
        const held = this.tools(upstream.name);
        if (listed.size !== held.length || held.some((tool) => listed.get(tool.name) !== tool.hash)) {
          throw new BrokerError(`upstream '${upstream.name}' came back with other tools than it was started with; restart Airlock to check them`);
        }
        // Closed meanwhile: close() closed the client it saw, so this one is closed here.
        if (this.closing) throw new BrokerError(`the broker was closed while upstream '${upstream.name}' reconnected`);
      } catch (error) {
        await fresh.client.close().catch(() => undefined);
        throw error;
      }
      upstream.client = fresh.client;
      upstream.transport = fresh.transport;
    })().finally(() => {
      upstream.reconnecting = undefined;
    });
    try {
      await upstream.reconnecting;
    } catch (error) {
      // Why is the upstream's own text (its stderr can quote a credential it was given): the
      // operator's, in the log; a script, its run and the agent are told only that.
      if (this.closing) throw new ToolCallError(`upstream '${upstream.name}' was closed while it reconnected (Airlock is stopping)`, "error");
      console.error(`airlock: upstream '${upstream.name}' could not be reconnected: ${quoted((error as Error).message, 1500)}`);
      throw new ToolCallError(`upstream '${upstream.name}' lost its connection and could not be reconnected (the server's log says why)`, "error");
    }
    return upstream.client;
  }

  /**
   * Connects every configured upstream, lists and pins its tools. An upstream that cannot be
   * connected or listed fails the whole connect, naming it; with `partial` (a server's runtime) the
   * broker starts with the others instead, and that upstream is unavailable (`unavailableServers`,
   * its calls refused) until `retryUnavailable` reaches it.
   */
  static async connect(config: AirlockConfig, options: { pins: PinStore; limits?: Partial<BrokerLimits>; partial?: boolean }): Promise<ToolBroker> {
    const limits = { ...DEFAULT_BROKER_LIMITS, ...options.limits };
    const servers = Object.entries(config.servers);
    const settled = await Promise.allSettled(servers.map(([name, server]) => ToolBroker.open(name, server, limits)));
    const upstreams = new Map<string, Upstream>();
    const registry = new Map<string, ToolInfo>();
    const unavailable = new Map<string, Unavailable>();
    settled.forEach((outcome, i) => {
      const [name, server] = servers[i]!;
      if (outcome.status === "rejected") {
        unavailable.set(name, { config: server, reason: quoted((outcome.reason as Error).message, 500), retryAt: Date.now() + UNAVAILABLE_RETRY_MS });
        return;
      }
      upstreams.set(name, outcome.value.upstream);
      for (const tool of outcome.value.tools) registry.set(`${tool.server}.${tool.name}`, tool);
    });
    try {
      const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
      if (failed && !options.partial) throw failed.reason;
      await ToolBroker.checkPins(registry.values(), options.pins);
    } catch (error) {
      await Promise.allSettled([...upstreams.values()].map((u) => u.client.close()));
      throw error;
    }
    return new ToolBroker(upstreams, registry, unavailable, options.pins, config, limits);
  }

  /** Connects one upstream and lists its tools; a listing that fails closes the connection. */
  private static async open(name: string, server: ServerConfig, limits: BrokerLimits): Promise<{ upstream: Upstream; tools: ToolInfo[] }> {
    const upstream = await connectUpstream(name, server, limits.connectTimeoutMs);
    try {
      return { upstream, tools: await ToolBroker.listAll(upstream, limits) };
    } catch (error) {
      await upstream.client.close().catch(() => undefined);
      throw error;
    }
  }

  /** Quarantines each tool whose hash is not its pin; pins a first start's first listing. */
  private static async checkPins(tools: Iterable<ToolInfo>, pins: PinStore): Promise<void> {
    for (const tool of tools) {
      if (tool.quarantined) continue;
      const pinned = await pins.get(tool.server, tool.name);
      if (pinned === undefined) await pins.set(tool.server, tool.name, tool.hash);
      else if (pinned !== tool.hash) {
        tool.quarantined = true;
        tool.quarantineReason = pinned === NEVER_ACCEPTED ? "new_tool" : "hash_changed";
      }
    }
  }

  /**
   * Settings under a connected server's `tools` (a data class, pii fields) that name no tool it
   * lists: most likely a typo, which leaves the tool meant at its server's data class. One line
   * each, naming the nearest listed tool when one is near.
   */
  unmatchedToolSettings(): string[] {
    return [...this.upstreams.keys()].flatMap((server) => {
      const listed = this.tools(server).map((tool) => tool.name);
      return Object.keys(this.config.servers[server]?.tools ?? {})
        .filter((name) => !listed.includes(name))
        .map((name) => {
          const near = nearestName(name, listed);
          return `servers.${server}.tools.${name} names no tool '${server}' lists${near ? ` (did you mean ${near}?)` : ""}; the settings apply to nothing`;
        });
    });
  }

  /** The upstreams that could not be connected or listed, and why (the upstream's error text: for operators, not agents). */
  unavailableServers(): ReadonlyMap<string, string> {
    return new Map([...this.unavailable].map(([name, { reason }]) => [name, reason]));
  }

  /**
   * Tries again each unavailable upstream whose retry is due (every UNAVAILABLE_RETRY_MS): one that
   * answers is listed and pin-checked as at a start (a tool nobody accepted is quarantined), and
   * its tools join the registry. Resolves with the names of those that came back, whose tools the
   * caller mirrors into the registry.
   */
  async retryUnavailable(now = Date.now()): Promise<string[]> {
    // One attempt at a time per upstream: one can outlast the interval (connect and listing timeouts).
    const due = [...this.unavailable].filter(([, entry]) => entry.retryAt <= now && !entry.trying);
    if (due.length === 0 || this.closing) return [];
    for (const [, entry] of due) entry.trying = true;
    const back = await Promise.all(
      due.map(async ([name, entry]) => {
        let opened: { upstream: Upstream; tools: ToolInfo[] } | undefined;
        try {
          opened = await ToolBroker.open(name, entry.config, this.limits);
          await ToolBroker.checkPins(opened.tools, this.pins);
          if (this.closing) throw new BrokerError(`the broker was closed while upstream '${name}' connected`);
        } catch (error) {
          await opened?.upstream.client.close().catch(() => undefined);
          entry.reason = quoted((error as Error).message, 500);
          entry.retryAt = Date.now() + UNAVAILABLE_RETRY_MS;
          entry.trying = false;
          return [];
        }
        this.upstreams.set(name, opened.upstream);
        for (const tool of opened.tools) this.registry.set(`${tool.server}.${tool.name}`, tool);
        this.unavailable.delete(name);
        return [name];
      }),
    );
    return back.flat();
  }

  /**
   * Lists again each connected upstream that said its tools changed, as at a start: a tool it added
   * or whose definition changed is pin-checked (quarantined until two admins accept it), one it no
   * longer lists is dropped (its calls refused as unknown), and an unchanged one is kept as it was
   * (its acceptance and overrides with it). A listing that fails leaves the tools as they were and
   * is tried again at the next check. Resolves with the names of the upstreams whose tools changed,
   * whose tools the caller mirrors into the registry.
   */
  async relistChanged(): Promise<string[]> {
    const due = [...this.upstreams.values()].filter((upstream) => listingChanged.has(upstream.client) && !upstream.relisting);
    const changed = await Promise.all(
      due.map(async (upstream) => {
        upstream.relisting = true;
        const { client } = upstream;
        // Cleared first: a notification during the listing asks for another.
        listingChanged.delete(client);
        try {
          const listed = await ToolBroker.listAll(upstream, this.limits);
          const held = new Map(this.tools(upstream.name).map((tool) => [tool.name, tool]));
          // A tool the listing quarantines itself (its name now listed twice) is fresh too: the held, accepted copy must not stand for it.
          const fresh = listed.filter((tool) => tool.quarantined || held.get(tool.name)?.hash !== tool.hash);
          const dropped = [...held.keys()].filter((name) => !listed.some((tool) => tool.name === name));
          if (fresh.length === 0 && dropped.length === 0) return [];
          await ToolBroker.checkPins(fresh, this.pins);
          if (this.closing) return [];
          this.replaceTools(
            upstream.name,
            listed.map((tool) => (fresh.includes(tool) ? tool : held.get(tool.name)!)),
          );
          return [upstream.name];
        } catch (error) {
          listingChanged.add(client);
          console.error(
            `airlock: upstream '${upstream.name}' said its tools changed, and listing them again failed (its tools stay as they were; tried again shortly): ${quoted((error as Error).message, 1500)}`,
          );
          return [];
        } finally {
          upstream.relisting = false;
        }
      }),
    );
    return changed.flat();
  }

  /** One server's tools replaced in the registry, where its tools were (the order declarations follow); their compiled schemas forgotten. */
  private replaceTools(server: string, tools: readonly ToolInfo[]): void {
    const entries: [string, ToolInfo][] = [];
    let placed = false;
    for (const [key, tool] of this.registry) {
      if (tool.server !== server) entries.push([key, tool]);
      else if (!placed) {
        placed = true;
        entries.push(...tools.map((t): [string, ToolInfo] => [`${t.server}.${t.name}`, t]));
      }
      if (tool.server === server) {
        this.inputValidators.delete(validatorKey(tool));
        this.outputValidators.delete(validatorKey(tool));
      }
    }
    if (!placed) entries.push(...tools.map((t): [string, ToolInfo] => [`${t.server}.${t.name}`, t]));
    this.registry.clear();
    for (const [key, tool] of entries) this.registry.set(key, tool);
  }

  private static async listAll(upstream: Upstream, limits: BrokerLimits): Promise<ToolInfo[]> {
    const raw: Record<string, unknown>[] = [];
    let cursor: string | undefined;
    // One deadline for the whole listing, and a cap on pages: pages that never end (each quick,
    // none with a tool) would otherwise hold start-up, and every upstream with it, for ever.
    const deadline = Date.now() + limits.connectTimeoutMs;
    let pages = 0;
    do {
      if (++pages > MAX_TOOL_PAGES) throw new BrokerError(`upstream '${upstream.name}' lists its tools on more than ${MAX_TOOL_PAGES} pages`);
      // The request itself, not client.listTools(): the SDK compiles every output schema it lists,
      // and one it cannot compile failed the listing of every upstream. The broker compiles each
      // tool's schemas on its own (./schema-check.ts), so a bad one refuses that tool's calls only.
      const page = await withTimeout(
        upstream.client.request({ method: "tools/list", params: cursor ? { cursor } : {} }, ListToolsResultSchema),
        Math.max(1, deadline - Date.now()),
        `listing tools of '${upstream.name}'`,
      );
      raw.push(...(page.tools as unknown as Record<string, unknown>[]));
      cursor = page.nextCursor;
      if (raw.length > limits.maxToolsPerServer) throw new BrokerError(`upstream '${upstream.name}' lists more than ${limits.maxToolsPerServer} tools`);
    } while (cursor);
    const counts = new Map<string, number>();
    for (const t of raw) counts.set(String(t.name), (counts.get(String(t.name)) ?? 0) + 1);
    const seen = new Set<string>();
    const tools: ToolInfo[] = [];
    for (const t of raw) {
      const name = String(t.name);
      const validName = TOOL_NAME.test(name);
      const safeName = validName ? name : sanitizeText(name, 128).replace(/[^A-Za-z0-9_.-]/g, "_") || "_";
      if (seen.has(safeName)) continue;
      seen.add(safeName);
      const collision = (counts.get(name) ?? 0) > 1 || !validName;
      const override = upstream.config.tools[name];
      tools.push({
        server: upstream.name,
        name: safeName,
        description: sanitizeText(typeof t.description === "string" ? t.description : "", 8000),
        annotations: annotationsOf(t.annotations),
        dataClass: override?.dataClass ?? upstream.config.dataClass,
        quarantined: collision,
        quarantineReason: collision ? "name_collision" : null,
        hash: toolHash(t),
        inputSchema: (t.inputSchema as Record<string, unknown>) ?? { type: "object" },
        outputSchema: (t.outputSchema as Record<string, unknown> | undefined) ?? null,
        preview: previewHintsOf(t._meta),
        piiFields: override?.piiFields ?? {},
      });
    }
    return tools;
  }

  /** Every tool, including quarantined ones (flagged). */
  tools(server?: string): ToolInfo[] {
    return [...this.registry.values()].filter((t) => !server || t.server === server);
  }

  tool(server: string, name: string): ToolInfo | undefined {
    return this.registry.get(`${server}.${name}`);
  }

  get packages(): readonly string[] {
    return this.config.packages;
  }

  /**
   * Admin decision: trust the definition with `acceptedHash` — the one the admin was shown. It is
   * pinned, and this broker lifts its quarantine only if the definition it holds is that one; an
   * upstream that showed this process something else stays quarantined here. Returns whether the
   * quarantine was lifted in this process.
   */
  async accept(server: string, name: string, acceptedHash: string): Promise<boolean> {
    const tool = this.tool(server, name);
    if (!tool) throw new BrokerError(`no tool ${server}.${name}`);
    if (tool.quarantineReason === "name_collision")
      throw new BrokerError(`${server}.${name} is listed twice (or badly named) by its upstream; it cannot be accepted`);
    await this.pins.set(server, name, acceptedHash);
    if (tool.hash !== acceptedHash) return false;
    tool.quarantined = false;
    tool.quarantineReason = null;
    return true;
  }

  /**
   * A quarantined tool may have been accepted through another process since this broker connected:
   * the pin store is the source of truth, so look again before refusing, and lift the quarantine
   * here if the pin now matches what the upstream serves.
   */
  private async acceptedElsewhere(tool: ToolInfo): Promise<boolean> {
    if (!ACCEPTABLE.has(tool.quarantineReason)) return false;
    if ((await this.pins.get(tool.server, tool.name)) !== tool.hash) return false;
    tool.quarantined = false;
    tool.quarantineReason = null;
    return true;
  }

  /**
   * Lifts the quarantine of every tool an admin accepted since, wherever they did (the CLI, another
   * web process): what intake calls before it decides, so a run is not denied for a quarantine the
   * database has ended. One read for all the quarantined tools (pinnedMany); none when no tool is.
   */
  async refreshAcceptances(): Promise<void> {
    const quarantined = [...this.registry.values()].filter((tool) => tool.quarantined && ACCEPTABLE.has(tool.quarantineReason));
    if (quarantined.length === 0) return;
    if (!this.pins.pinnedMany) {
      for (const tool of quarantined) await this.acceptedElsewhere(tool);
      return;
    }
    const pinned = await this.pins.pinnedMany(quarantined.map((tool) => ({ server: tool.server, tool: tool.name })));
    for (const tool of quarantined) {
      if (pinned.get(`${tool.server}.${tool.name}`) !== tool.hash) continue;
      tool.quarantined = false;
      tool.quarantineReason = null;
    }
  }

  /** The declarations of the tools as agents are shown them (`shownToAgents`). */
  declarations(server?: string): string {
    return generateDeclarations(this.tools(server).map(shownToAgents));
  }

  /** Tools matching the query's words (all, without words), best first, at most `limit`, of one server if given. */
  search(query: string, detail: SearchDetail = "summary", options: { limit?: number; server?: string } = {}): SearchAnswer {
    const terms = query.toLowerCase().split(/\s+/).filter(Boolean);
    const found = this.tools(options.server)
      .map(shownToAgents)
      .map((tool) => {
        const name = `${tool.server}.${tool.name}`.toLowerCase();
        const text = `${tool.description} ${tool.annotations.title ?? ""}`.toLowerCase();
        const score = terms.reduce((s, term) => s + (name.includes(term) ? 3 : 0) + (text.includes(term) ? 1 : 0), 0);
        return { tool, score };
      })
      .filter((x) => terms.length === 0 || x.score > 0)
      .sort((a, b) => b.score - a.score || `${a.tool.server}.${a.tool.name}`.localeCompare(`${b.tool.server}.${b.tool.name}`))
      .slice(0, options.limit ?? 20)
      .map(({ tool }) => tool);
    const tools = found.map((tool) =>
      detail === "summary" ? { server: tool.server, name: tool.name, summary: summaryLine(tool) } : { server: tool.server, name: tool.name },
    );
    // One declaration for every tool found: the raw JSON Schemas would double what an agent reads.
    return detail === "full" ? { tools, declaration: generateDeclarations(found) } : { tools };
  }

  private validatorFor(cache: Map<string, SchemaCheck | Error>, key: string, schema: Record<string, unknown>): SchemaCheck | Error {
    let v = cache.get(key);
    if (!v) {
      v = compileToolSchema(schema);
      cache.set(key, v);
    }
    return v;
  }

  /**
   * Why the tool would refuse `args` before calling its upstream (not an object, or off its input
   * schema), or null: callTool's own check, which a plan preview applies to the writes it intercepts
   * (`ignore`: issues about values only the real call will know).
   */
  argumentsProblem(server: string, name: string, args: JsonValue, ignore?: (issue: SchemaIssue) => boolean): string | null {
    const key = `${server}.${name}`;
    const tool = this.registry.get(key);
    if (!tool) return `unknown tool ${sanitizeText(key, 200)}`;
    if (args === null || typeof args !== "object" || Array.isArray(args)) return `arguments of ${key} must be an object`;
    const input = this.validatorFor(this.inputValidators, validatorKey(tool), tool.inputSchema);
    if (input instanceof Error) return input.message;
    const issues = ignore ? input(args).filter((issue) => !ignore(issue)) : input(args);
    return issues.length > 0 ? `invalid arguments for ${key}: ${quoted(issuesText(issues), 500)}` : null;
  }

  /** Calls one tool; the signature matches the sandbox's CallTool. */
  readonly callTool = async (server: string, name: string, args: JsonValue, signal: AbortSignal): Promise<JsonValue> => {
    const refuse = (message: string): never => {
      throw new ToolCallError(message, "refused");
    };
    const key = `${server}.${name}`;
    const tool = this.registry.get(key);
    const upstream = this.upstreams.get(server);
    const down = this.unavailable.get(server);
    // Why (the upstream's own error text) is the operator's, in the log: a script is told only that.
    if (down) return refuse(`upstream '${server}' is unavailable (Airlock could not connect to it); it is tried again every ${UNAVAILABLE_RETRY_MS / 1000} s`);
    if (!tool || !upstream) return refuse(`unknown tool ${sanitizeText(key, 200)}`);
    if (tool.quarantined && !(await this.acceptedElsewhere(tool))) {
      return refuse(`tool ${key} is quarantined (${tool.quarantineReason}) until an admin accepts it`);
    }
    // Listed again meanwhile (relistChanged): the call is made only under the definition the registry holds now.
    if (this.registry.get(key) !== tool) return refuse(`tool ${key} changed while it was called; call it again`);
    const problem = this.argumentsProblem(server, name, args);
    if (problem) return refuse(problem);
    // A result could not be checked: the call is not made.
    const output = tool.outputSchema ? this.validatorFor(this.outputValidators, validatorKey(tool), tool.outputSchema) : null;
    if (output instanceof Error) return refuse(output.message);

    // The SDK never removes the abort listener it puts on a request's signal: given the run's signal,
    // the end of the run would send the upstream a cancellation for every call it already answered.
    // Each call gets its own signal instead, tied to the run's only while the call is in flight.
    const call = new AbortController();
    const cancel = () => call.abort(signal.reason);
    if (signal.aborted) cancel();
    else signal.addEventListener("abort", cancel, { once: true });
    let value: JsonValue;
    try {
      const client = await this.connected(upstream);
      const result = await client
        .callTool({ name, arguments: args as Record<string, unknown> }, undefined, { signal: call.signal, timeout: this.config.callTimeoutMs })
        .catch((error: unknown) => {
          throw this.unanswered(key, server, error, call.signal);
        });
      const size = Buffer.byteLength(JSON.stringify(result) ?? "");
      if (size > this.limits.maxResultBytes)
        throw new ToolCallError(`the result of ${key} is ${size} bytes, over the ${this.limits.maxResultBytes}-byte limit`, "error");
      const content = toSafeJson(result.content ?? [], this.limits);
      if (result.isError) {
        const text = Array.isArray(content)
          ? content.map((c) => (c && typeof c === "object" && !Array.isArray(c) && typeof c.text === "string" ? c.text : "")).join("\n")
          : "";
        throw new ToolCallError(`${key} failed: ${quoted(text, 2000) || "error without text"}`, "error");
      }
      if (output) {
        if (result.structuredContent === undefined) throw new ToolCallError(`${key} returned no structured content for its outputSchema`, "error");
        value = toSafeJson(result.structuredContent, this.limits);
        const issues = output(value);
        if (issues.length > 0) {
          throw new ToolCallError(`${key} returned output that does not match its outputSchema: ${quoted(issuesText(issues), 500)}`, "error");
        }
      } else if (result.structuredContent !== undefined) {
        value = toSafeJson(result.structuredContent, this.limits);
      } else {
        const items = Array.isArray(content) ? content : [];
        const texts = items.map((c) => (c && typeof c === "object" && !Array.isArray(c) && c.type === "text" && typeof c.text === "string" ? c.text : null));
        value = texts.every((t) => t !== null) ? texts.join("\n") : content;
      }
    } catch (error) {
      if (error instanceof ToolCallError) throw error;
      throw new ToolCallError(`${key} failed: ${quoted((error as Error).message ?? String(error), 1000)}`, "error");
    } finally {
      signal.removeEventListener("abort", cancel);
    }
    return value;
  };

  /**
   * A call the upstream did not answer: a timeout, a cancel, or no answer at all (a refused or
   * dropped connection), which is not the tool's error to read, and whose transport text is the
   * operator's (the log), as for an upstream that cannot be connected. An error the upstream
   * answered with (a JSON-RPC error) is its own text, screened.
   */
  private unanswered(key: string, server: string, error: unknown, signal: AbortSignal): ToolCallError {
    if (signal.aborted) return new ToolCallError(`${key} was cancelled before it answered`, "error");
    if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
      return new ToolCallError(`${key} failed: upstream '${server}' did not answer within ${this.config.callTimeoutMs} ms; try again later`, "error");
    }
    if (!(error instanceof McpError) || error.code === ErrorCode.ConnectionClosed) {
      console.error(`airlock: ${key}: upstream '${server}' could not be reached: ${quoted((error as Error).message ?? String(error), 1500)}`);
      return new ToolCallError(`${key} failed: upstream '${server}' could not be reached (the server's log says why); try again later`, "error");
    }
    return new ToolCallError(`${key} failed: ${quoted(error.message, 1000)}`, "error");
  }

  async close(): Promise<void> {
    this.closing = true;
    // A reconnect under way sees `closing` and closes its own client; its call is refused.
    await Promise.allSettled([...this.upstreams.values()].flatMap((u) => [u.client.close(), ...(u.reconnecting ? [u.reconnecting] : [])]));
  }
}
