/**
 * Public API of the sandbox: run one script, cold (`runInSandbox`) or from a warm pool
 * (`createSandboxPool`). See docs/sandbox.md for the layers and the attack tests.
 *
 * Guarantees: every outcome, including "the sandbox cannot be built here", is an Envelope; the
 * isolation level asked for is the one used or the run fails with SANDBOX_UNAVAILABLE (never a
 * silent downgrade); each sandbox process runs exactly one script and is destroyed; scripts with
 * imports outside the allowlist are refused before a sandbox is spent (CAPABILITY_DENIED).
 * A finished sandbox's directories and scratch mount are removed after its envelope is returned;
 * `membersTornDown()` waits for that (a process about to exit calls it).
 */
import { SandboxMember, type MemberJob } from "./member";
import { SandboxUnavailable, SPAWN_LIMIT_KEYS, isolationReport, type MemberOptions } from "./member-command";
import { ScriptRejected, prepareScript } from "./script";
import { DEFAULT_LIMITS, emptyGate, type Envelope, type IsolationLevel, type RunRequest, type SandboxLimits } from "./types";
import { DEFAULT_PACKAGES } from "@/lib/contracts/packages";

export * from "./types";
export { ALLOWED_BUILTINS } from "./script";
export { membersTornDown } from "./member";
export { sanitizeText, looksLikeInstructions } from "@/lib/untrusted/sanitize";
export { toSafeJson, parseSafeJson, SafeJsonError, type JsonValue } from "@/lib/untrusted/safe-json";

/** The package allowlist shipped by default: a CSV parser and decimal arithmetic. */

export type SandboxConfig = {
  isolation?: IsolationLevel;
  /** Package allowlist (names under the repository's node_modules). */
  packages?: readonly string[];
  /** Node >= 26 binary; defaults to this process's, else the repo's pinned one. */
  nodePath?: string;
  limits?: Partial<SandboxLimits>;
};

function failure(level: IsolationLevel, code: "SANDBOX_UNAVAILABLE" | "CAPABILITY_DENIED" | "SCRIPT_ERROR", message: string): Envelope {
  return {
    status: "failed",
    result: null,
    logs: [],
    error: { code, message, untrusted: false },
    stats: { wallMs: 0, cpuMs: 0, peakRssMb: 0, toolCalls: 0 },
    flags: [],
    truncated: false,
    isolation: isolationReport(null, level),
    artifacts: [],
    gate: emptyGate(),
  };
}

/** How long the pool waits after a run starts or ends before it spawns replacements. */
export const REFILL_QUIET_MS = 100;
/** The longest it waits for such a pause. */
export const REFILL_MAX_WAIT_MS = 1_000;

type Prepared = { job: MemberJob } | { envelope: Envelope };

function prepare(req: RunRequest, limits: SandboxLimits, level: IsolationLevel, packages: readonly string[]): Prepared {
  let prepared: ReturnType<typeof prepareScript>;
  try {
    prepared = prepareScript(req.code, req.language ?? "javascript", packages);
  } catch (error) {
    if (!(error instanceof ScriptRejected)) throw error;
    const code = error.message.startsWith("import") ? "CAPABILITY_DENIED" : "SCRIPT_ERROR";
    return { envelope: failure(level, code, error.message) };
  }
  return {
    job: {
      module: prepared.module,
      prefixColumns: prepared.prefixColumns,
      inputs: req.inputs ?? [],
      allowedTools: new Set(req.allowedTools),
      toolCallCaps: new Map(Object.entries(req.toolCallCaps ?? {})),
      knownTools: [...new Set([...(req.knownTools ?? []), ...req.allowedTools])],
      callTool: req.callTool,
      onToolCall: req.onToolCall,
      limits,
      signal: req.signal,
    },
  };
}

/** Starts a fresh sandbox for one script (cold start) and returns its envelope. */
export async function runInSandbox(req: RunRequest & SandboxConfig): Promise<Envelope> {
  const level = req.isolation ?? "strict";
  const packages = req.packages ?? DEFAULT_PACKAGES;
  const limits = { ...DEFAULT_LIMITS, ...req.limits };
  const prepared = prepare(req, limits, level, packages);
  if ("envelope" in prepared) return prepared.envelope;
  let member: SandboxMember;
  try {
    member = await SandboxMember.create({ isolation: level, limits, packages, nodePath: req.nodePath });
  } catch (error) {
    if (error instanceof SandboxUnavailable) return failure(level, "SANDBOX_UNAVAILABLE", error.message);
    throw error;
  }
  return member.run(prepared.job);
}

export type SandboxPool = {
  /** Runs one script in a pre-started member; spawn-time limits are the pool's. */
  run(req: RunRequest): Promise<Envelope>;
  /** Members started and waiting. */
  readonly idle: number;
  close(): Promise<void>;
};

/**
 * A warm pool: `size` sandboxes started ahead of time, each used for exactly one run and then
 * destroyed; a member that dies while waiting is replaced. If members cannot start (the level
 * cannot be met), runs fail with SANDBOX_UNAVAILABLE.
 */
export function createSandboxPool(config: SandboxConfig & { size?: number } = {}): SandboxPool {
  const size = config.size ?? 2;
  const level = config.isolation ?? "strict";
  const packages = config.packages ?? DEFAULT_PACKAGES;
  const poolLimits = { ...DEFAULT_LIMITS, ...config.limits };
  const options: MemberOptions = { isolation: level, limits: poolLimits, packages, nodePath: config.nodePath };
  const slots: Promise<SandboxMember>[] = [];
  const live = new Set<SandboxMember>();
  let closed = false;

  const spawnSlot = () => {
    const slot = SandboxMember.create(options).then(async (member) => {
      live.add(member);
      void member.exited.then(() => {
        live.delete(member);
        const index = slots.indexOf(slot);
        // Died while waiting: replace it (a member taken for a run is no longer in `slots`).
        if (index !== -1 && !closed) {
          void slots.splice(index, 1);
          spawnSlot();
        }
      });
      await member.ready;
      return member;
    });
    slot.catch(() => undefined);
    slots.push(slot);
  };
  for (let i = 0; i < size; i++) spawnSlot();

  // Replacements are spawned once no run has started or ended for REFILL_QUIET_MS, not while one
  // starts or is being recorded and answered: spawning forks this process and competes for the CPU
  // that work needs. Runs that never pause get them REFILL_MAX_WAIT_MS after the first was due. A
  // run that finds no warm member spawns one itself (take).
  let lastActivity = 0;
  let refillTimer: NodeJS.Timeout | null = null;
  const refillWhenQuiet = () => {
    lastActivity = performance.now();
    if (refillTimer || closed) return;
    const due = lastActivity;
    const check = () => {
      const now = performance.now();
      const quietFor = now - lastActivity;
      if (quietFor < REFILL_QUIET_MS && now - due < REFILL_MAX_WAIT_MS) {
        refillTimer = setTimeout(check, REFILL_QUIET_MS - quietFor);
        return;
      }
      refillTimer = null;
      while (!closed && slots.length < size) spawnSlot();
    };
    refillTimer = setTimeout(check, REFILL_QUIET_MS);
  };

  const take = async (): Promise<SandboxMember | Error> => {
    let lastError: Error = new SandboxUnavailable("the pool is closed");
    for (let attempt = 0; attempt <= size && !closed; attempt++) {
      if (slots.length === 0) spawnSlot();
      try {
        const member = await slots.shift()!;
        if (member.alive) return member;
      } catch (error) {
        lastError = error as Error;
      }
    }
    return lastError;
  };

  return {
    get idle() {
      return slots.length;
    },
    async run(req) {
      const limits = { ...poolLimits, ...req.limits };
      for (const key of SPAWN_LIMIT_KEYS) {
        if (limits[key] !== poolLimits[key]) throw new Error(`limit ${key} is fixed by the pool (${poolLimits[key]})`);
      }
      const prepared = prepare(req, limits, level, packages);
      if ("envelope" in prepared) return prepared.envelope;
      lastActivity = performance.now();
      const member = await take();
      if (member instanceof Error) {
        refillWhenQuiet();
        return failure(level, "SANDBOX_UNAVAILABLE", member.message);
      }
      try {
        return await member.run(prepared.job);
      } finally {
        refillWhenQuiet();
      }
    },
    async close() {
      closed = true;
      if (refillTimer) clearTimeout(refillTimer);
      const pending = slots.splice(0);
      await Promise.allSettled(pending.map((slot) => slot.then((member) => member.destroy())));
      await Promise.allSettled([...live].map((member) => member.destroy()));
    },
  };
}
