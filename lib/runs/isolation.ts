/**
 * The sandbox isolation level a process runs scripts at, found at start-up by really probing the
 * host (lib/sandbox/host.ts), and what start-up and the console say about it.
 *
 * Guarantees: a process that executes runs gets the configured level when the host provides it;
 * `strict` falls back to `permission-only` only when the config says `sandbox.allowDegraded`, and
 * the check then says why (`degraded`). The level is what the pool runs at and what policy decides
 * on (the Cedar request's `isolation`; the shipped policy denies scripts that are not read-only at
 * `permission-only`). A process that only enqueues cannot know which worker takes a run: it decides
 * with the configured level, or with `permission-only` when workers may degrade.
 * Refuses (IsolationUnavailable, one line saying what is missing and what to do): a host that
 * cannot meet the configured level without `allowDegraded`, and a host that cannot run a sandbox at
 * all (no Node >= 26.10, no prlimit) whatever the config says.
 */
import type { AirlockConfig } from "@/lib/broker/config";
import { detectHost, type HostFacts } from "@/lib/sandbox/host";
import type { IsolationLevel } from "@/lib/sandbox/types";

export type IsolationCheck = {
  configured: IsolationLevel;
  /** The level runs execute at in this process, and are decided on. */
  level: IsolationLevel;
  /** Why the level is below the configured one; null when it is the configured level. */
  degraded: string | null;
  /** Whether the host was probed (this process executes runs) or the level is the workers'. */
  probed: boolean;
};

export class IsolationUnavailable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "IsolationUnavailable";
  }
}

const NO_BWRAP = "bubblewrap (bwrap) is missing or cannot create namespaces on this host";

export async function checkIsolation(
  sandbox: AirlockConfig["sandbox"],
  options: { execute: boolean; probe?: () => Promise<HostFacts> },
): Promise<IsolationCheck> {
  const configured = sandbox.isolation;
  const allowDegraded = sandbox.allowDegraded === true;
  if (!options.execute) {
    const degrade = configured === "strict" && allowDegraded;
    return {
      configured,
      level: degrade ? "permission-only" : configured,
      degraded: degrade ? "workers may start at permission-only (sandbox.allowDegraded)" : null,
      probed: false,
    };
  }
  let facts: HostFacts;
  try {
    facts = await (options.probe ?? (() => detectHost()))();
  } catch (cause) {
    throw new IsolationUnavailable(`the sandbox cannot start on this host: ${(cause as Error).message}`, { cause });
  }
  if (!facts.prlimitPath) throw new IsolationUnavailable("the sandbox cannot start on this host: prlimit is not installed (apt-get install -y util-linux).");
  if (configured === "strict" && !facts.bwrapPath) {
    if (!allowDegraded) {
      throw new IsolationUnavailable(
        `sandbox isolation "strict" cannot be met: ${NO_BWRAP}. Install it (apt-get install -y bubblewrap), or set "sandbox": { "allowDegraded": true } in airlock.config.json to start at permission-only.`,
      );
    }
    return { configured, level: "permission-only", degraded: NO_BWRAP, probed: true };
  }
  return { configured, level: configured, degraded: null, probed: true };
}

const READ_ONLY_NOTE = "the shipped policy denies scripts that are not read-only";

/** The start-up line (`npm start`, `npm run worker`). */
export function describeIsolation(check: IsolationCheck): string {
  if (check.degraded) return `Sandbox isolation: permission-only (DEGRADED: ${check.degraded}; ${READ_ONLY_NOTE}).`;
  if (!check.probed) return `Sandbox isolation: ${check.level} (runs execute in workers, which probe their hosts when they start).`;
  if (check.level === "strict") return "Sandbox isolation: strict (bubblewrap, Node permission model, prlimit).";
  return `Sandbox isolation: permission-only (as configured, without bubblewrap; ${READ_ONLY_NOTE}).`;
}

/** The console's banner text, or null when runs execute at strict. */
export function isolationNotice(check: IsolationCheck): string | null {
  if (check.level === "strict") return null;
  const why = check.degraded ?? "as configured";
  return `Sandbox degraded: running at permission-only (${why}). Scripts that are not read-only are denied by the shipped policy until strict isolation is restored.`;
}
