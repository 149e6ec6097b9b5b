/**
 * `airlock audit …`: verify the log, sign a checkpoint, export evidence.
 *
 *   airlock audit verify [--from ID] [--json]    exit 0 and the head, or exit 1 naming the first broken event
 *                                                (or that checkpoints are missing)
 *   airlock audit checkpoint [--bootstrap] [--json]
 *                                                verify since the last checkpoint, then sign the head (for cron);
 *                                                --bootstrap signs a first one over an old log (new key or directory)
 *   airlock audit export --format jsonl|csv [filters] [--manifest FILE] > file
 *
 * Arguments are parsed strictly (parseCliArgs); anything unknown or malformed prints usage and
 * exits 2. The CLI acts as CLI_ACTOR (`system:cli`); every verification and export it runs is
 * itself an audit event (lib/audit/service.ts). A whole-chain verify that finds no problem also
 * signs a checkpoint; one that reports a problem never does.
 */
import { writeFile } from "node:fs/promises";
import { checkpointConfigFromEnv, type CheckpointConfig } from "@/lib/audit/checkpoints";
import { EXPORT_FORMATS, type ExportFormat } from "@/lib/audit/export";
import { auditFiltersSchema } from "@/lib/audit/filters";
import { checkpointAudited, exportAudited, runVerification, type VerificationOutcome } from "@/lib/audit/service";
import type { Db } from "@/lib/db";
import { withCliDatabase } from "./database";
import { CLI_ACTOR, exitOnUsageError, parseCliArgs, UsageError, type CliIo } from "./io";

export const AUDIT_USAGE = `Usage:
  airlock audit verify [--from ID] [--json]
  airlock audit checkpoint [--bootstrap] [--json]
  airlock audit export --format jsonl|csv [--q TEXT] [--agent NAME] [--person EMAIL] [--status S]
                       [--decision allow|escalate|deny] [--data-class C] [--tool SERVER.TOOL]
                       [--code-hash SHA256] [--since TIME] [--until TIME] [--manifest FILE]

verify recomputes the hash chain, the tool-call seals, each run's content against the digests in
its events (naming the run and field that differ) and the signed checkpoints: exit 0 with the
head, exit 1 naming the first broken event, or saying that checkpoints are missing (events older
than twice the checkpoint interval that no checkpoint covers). checkpoint --bootstrap signs a first
checkpoint over such a log (a new key or checkpoint directory): you vouch for the log as it is.
export writes to standard output; the manifest (row
count, time range, chain head) is the first JSONL line, and for CSV goes to standard error or FILE.
`;

export type AuditCommandDeps = {
  withDatabase: <T>(fn: (db: Db) => Promise<T>) => Promise<T>;
  checkpoints: () => CheckpointConfig;
};

const defaultDeps: AuditCommandDeps = {
  withDatabase: (fn) => withCliDatabase((db) => fn(db)),
  checkpoints: checkpointConfigFromEnv,
};

function printOutcome(io: CliIo, { report, checkpointFile }: VerificationOutcome, json: boolean): number {
  if (json) {
    io.stdout(JSON.stringify({ ...report, checkpointFile }, null, 2) + "\n");
  } else if (report.ok) {
    io.stdout(
      `OK: ${report.eventsChecked} event(s) verified${report.from ? ` from #${report.from}` : " from genesis"}, ` +
        `${report.sealsChecked} tool-call seal(s), the content of ${report.runsContentChecked} run(s), ${report.checkpointsChecked} checkpoint(s), in ${report.durationMs} ms.\n` +
        (report.runsNotCovered
          ? `${report.runsNotCovered} run(s) stored before content digests existed: their content is not covered (chain and seals only).\n`
          : "") +
        (report.head ? `Head: #${report.head.id} ${report.head.hash} (${report.head.at})\n` : "The log is empty.\n") +
        (checkpointFile ? `Checkpoint written: ${checkpointFile}\n` : ""),
    );
  } else {
    const broken = report.broken!;
    io.stderr(
      broken.reason === "checkpoints_missing"
        ? `CHECKPOINTS MISSING from event #${broken.eventId}: ${broken.reason}\n${broken.detail}\n`
        : `BROKEN at ${broken.eventId ? `event #${broken.eventId}` : "(no single event)"}: ${broken.reason}\n${broken.detail}\n` +
            (broken.run ? `Run: ${broken.run.id}${broken.run.field ? `, field: ${broken.run.field}` : " (row gone)"}\n` : ""),
    );
  }
  return report.ok ? 0 : 1;
}

async function verify(args: string[], io: CliIo, deps: AuditCommandDeps): Promise<number> {
  const { values } = parseCliArgs(args, { from: { type: "string" }, json: { type: "boolean" } }, AUDIT_USAGE);
  let from: bigint | undefined;
  if (values.from !== undefined) {
    if (!/^[1-9]\d{0,18}$/.test(values.from)) throw new UsageError("--from must be an event id (a positive whole number)", AUDIT_USAGE);
    from = BigInt(values.from);
  }
  const outcome = await deps.withDatabase((db) => runVerification(db, CLI_ACTOR, deps.checkpoints(), { from }));
  return printOutcome(io, outcome, values.json === true);
}

async function checkpoint(args: string[], io: CliIo, deps: AuditCommandDeps): Promise<number> {
  const { values } = parseCliArgs(args, { json: { type: "boolean" }, bootstrap: { type: "boolean" } }, AUDIT_USAGE);
  const outcome = await deps.withDatabase((db) => checkpointAudited(db, CLI_ACTOR, deps.checkpoints(), { bootstrap: values.bootstrap === true }));
  return printOutcome(io, outcome, values.json === true);
}

async function exportCommand(args: string[], io: CliIo, deps: AuditCommandDeps): Promise<number> {
  const { values } = parseCliArgs(
    args,
    {
      format: { type: "string" },
      q: { type: "string" },
      agent: { type: "string" },
      person: { type: "string" },
      status: { type: "string" },
      decision: { type: "string" },
      "data-class": { type: "string" },
      tool: { type: "string" },
      "code-hash": { type: "string" },
      since: { type: "string" },
      until: { type: "string" },
      manifest: { type: "string" },
    },
    AUDIT_USAGE,
  );
  const format = values.format;
  if (!format || !(EXPORT_FORMATS as readonly string[]).includes(format)) {
    throw new UsageError("--format must be jsonl or csv", AUDIT_USAGE);
  }
  const parsed = auditFiltersSchema.safeParse({
    q: values.q,
    agent: values.agent,
    person: values.person,
    status: values.status,
    decision: values.decision,
    dataClass: values["data-class"],
    tool: values.tool,
    codeHash: values["code-hash"],
    since: values.since,
    until: values.until,
  });
  if (!parsed.success) {
    const flag = (path: string) => `--${path.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
    throw new UsageError(parsed.error.issues.map((i) => `${flag(String(i.path[0]))} ${i.message}`).join("; "), AUDIT_USAGE);
  }
  const manifest = await deps.withDatabase(async (db) => {
    const prepared = await exportAudited(db, CLI_ACTOR, parsed.data, format as ExportFormat);
    for await (const chunk of prepared.rows) io.stdout(chunk);
    return prepared.manifest;
  });
  if (values.manifest) await writeFile(values.manifest, JSON.stringify(manifest, null, 2) + "\n");
  if (format === "csv" && !values.manifest) io.stderr(`manifest: ${JSON.stringify(manifest)}\n`);
  io.stderr(`Exported ${manifest.rowCount} event(s)${manifest.chainHead ? `; chain head #${manifest.chainHead.id} ${manifest.chainHead.hash}` : ""}.\n`);
  return 0;
}

const SUBCOMMANDS = { verify, checkpoint, export: exportCommand } as const satisfies Record<
  string,
  (args: string[], io: CliIo, deps: AuditCommandDeps) => Promise<number>
>;

export async function auditCommand(argv: string[], io: CliIo, deps: AuditCommandDeps = defaultDeps): Promise<number> {
  const [sub, ...args] = argv;
  return exitOnUsageError(io, async () => {
    if (sub === "--help" || sub === "help") {
      io.stdout(AUDIT_USAGE);
      return 0;
    }
    const command = sub && Object.hasOwn(SUBCOMMANDS, sub) ? SUBCOMMANDS[sub as keyof typeof SUBCOMMANDS] : undefined;
    if (!command) throw new UsageError(sub ? `unknown audit command "${sub}"` : "an audit command is required", AUDIT_USAGE);
    return command(args, io, deps);
  });
}
