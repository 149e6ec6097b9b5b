/**
 * `airlock audit …`: verify the log, sign a checkpoint, export evidence.
 *
 *   airlock audit verify [--from ID] [--json] [--as EMAIL]
 *                                                exit 0 and the head, or exit 1 naming the first broken event
 *                                                (or that checkpoints are missing)
 *   airlock audit checkpoint [--bootstrap] [--json]
 *                                                verify since the last checkpoint, then sign the head (for cron);
 *                                                --bootstrap signs a first one over an old log (new key or directory)
 *   airlock audit export --format jsonl|csv [--per-run] [--no-audit-reads] [filters] [--manifest FILE] [--as EMAIL] > file
 *   airlock audit purge [--as-of TIME] [--json]  the retention job for a past instant (default now), with a summary
 *   airlock audit hold --run ID|--agent NAME --reason TEXT [--as EMAIL]
 *   airlock audit release --hold ID --reason TEXT [--as EMAIL]
 *   airlock audit evidence RUN_ID [--as EMAIL] > run.evidence.json
 *                                                one run's evidence file (lib/audit/evidence.ts), after a checkpoint
 *   airlock audit public-key > airlock-audit.pub.pem  the signing key's public half, to hand to whoever checks evidence
 *   airlock audit verify-evidence FILE [--public-key PEM]
 *                                                checks that file offline (lib/audit/evidence-verify.ts): never
 *                                                opens the database; exit 0 OK or UNANCHORED (no key), exit 1
 *                                                naming every value that does not match
 *   airlock audit verify-export FILE [--checkpoint FILE] [--public-key PEM]
 *                                                checks a JSONL events export offline (lib/audit/export-verify.ts);
 *                                                with a signed checkpoint, anchored: exit 0 OK or UNANCHORED,
 *                                                exit 1 naming every event that does not match
 *
 * Arguments are parsed strictly (parseCliArgs); anything unknown or malformed prints usage and
 * exits 2: a value not of its flag's form (an id that is no UUID, an --as that is no email, a
 * reversed --since/--until, a --public-key file that is no public key) is named with its flag; a
 * --from past the log's last event is refused (exit 1) rather than reported as an empty log. verify, checkpoint and export act as cliActor (lib/cli/person.ts: --as EMAIL, else
 * `cli:<os user>@<host>`); every verification and export it runs is
 * itself an audit event (lib/audit/service.ts). A whole-chain verify that finds no problem also
 * signs a checkpoint; one that reports a problem never does.
 */
import { createPublicKey, type KeyObject } from "node:crypto";
import { constants } from "node:fs";
import { access, open, readFile, writeFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { checkCheckpoint, checkpointConfigFromEnv, loadSigningKey, type CheckpointConfig } from "@/lib/audit/checkpoints";
import { EXPORT_FORMATS, type ExportFormat } from "@/lib/audit/export";
import { auditFiltersSchema } from "@/lib/audit/filters";
import { EvidenceFormatError, parseEvidence, verifyRunEvidence, type EvidenceVerdict } from "@/lib/audit/evidence-verify";
import { ExportFormatError, verifyAuditExport, type Anchor, type ExportVerdict } from "@/lib/audit/export-verify";
import { checkpointAudited, exportAudited, exportEvidenceAudited, runVerification, type VerificationOutcome } from "@/lib/audit/service";
import { placeHold, releaseHold } from "@/lib/audit/holds";
import { purgeExpired } from "@/lib/audit/retention";
import type { RetentionDays } from "@/lib/audit/retention-windows";
import { recordForbidden } from "@/lib/audit/access";
import type { Actor } from "@/lib/contracts/scopes";
import type { Db } from "@/lib/db";
import { AppError } from "@/lib/errors";
import { withCliDatabase } from "./database";
import { emailFlag, exitOnUsageError, namingFlags, parseCliArgs, typed, UsageError, uuidFlag, type CliIo } from "./io";
import { cliActor } from "./person";

export const AUDIT_USAGE = `Usage:
  airlock audit verify [--from ID] [--json] [--as EMAIL]
  airlock audit checkpoint [--bootstrap] [--json] [--as EMAIL]
  airlock audit export --format jsonl|csv [--per-run] [--no-audit-reads] [--q TEXT] [--agent NAME]
                       [--person EMAIL] [--status S] [--decision allow|escalate|deny] [--data-class C]
                       [--tool SERVER.TOOL] [--code-hash SHA256] [--since TIME] [--until TIME]
                       [--manifest FILE] [--as EMAIL]
  airlock audit purge [--as-of TIME] [--json]
  airlock audit hold --run ID|--agent NAME --reason TEXT [--as EMAIL]
  airlock audit release --hold ID --reason TEXT [--as EMAIL]
  airlock audit evidence RUN_ID [--as EMAIL] > run.evidence.json
  airlock audit public-key > airlock-audit.pub.pem
  airlock audit verify-evidence FILE [--public-key PEM]
  airlock audit verify-export FILE [--checkpoint FILE] [--public-key PEM]

verify recomputes the hash chain, the tool-call seals, each run's content against the digests in
its events (naming the run and field that differ) and the signed checkpoints: exit 0 with the
head, exit 1 naming the first broken event, or saying that checkpoints are missing (events older
than three checkpoint intervals that no checkpoint covers). checkpoint --bootstrap signs a first
checkpoint over such a log (a new key or checkpoint directory): you vouch for the log as it is.
export writes to standard output one row per audit event (--per-run: one per matching run),
leaving out the log's own reads with --no-audit-reads; the manifest (row count, time range, chain
head) is the first JSONL line, and for CSV goes to standard error or FILE. verify, checkpoint and
export are recorded as the person --as names (an enabled user), else as cli:<os user>@<host>.
purge deletes the payloads whose retention window (retention.days in the config) ended at TIME (an
ISO 8601 time that has passed; default now), except of runs under a legal hold. hold and release
place and release a legal hold, as the person --as names (else as the CLI).
evidence writes one run's evidence file (its events with proofs to a signed tree head, its content,
reviews, tool calls and outcome) to standard output, after signing a checkpoint that covers it.
public-key prints the public half of the signing key (AIRLOCK_AUDIT_KEY_FILE) for whoever checks.
verify-evidence checks such a file without the database, with the public key in PEM (default: the
key of AIRLOCK_AUDIT_KEY_FILE, when that file is here): exit 0 printing OK, or UNANCHORED when there
is no key; exit 1 naming each value that does not match.
verify-export checks a JSONL events export the same way, line by line: each event's hash, the chain
between them, the manifest, and the code, purpose, result, error and tool calls shown against the
digests the events carry. With --checkpoint (a file of AIRLOCK_AUDIT_CHECKPOINT_DIR) and the public
key, the events from genesis to the checkpoint's are anchored to the signing key: exit 0 printing
OK; UNANCHORED without a checkpoint the file's events reach; exit 1 naming each event that does not
match.
`;

export type AuditCommandDeps = {
  withDatabase: <T>(fn: (db: Db) => Promise<T>) => Promise<T>;
  checkpoints: () => CheckpointConfig;
  /** The retention windows (the config's `retention.days`); null when the config cannot be used. */
  retention?: (io: CliIo) => Promise<RetentionDays | null>;
};

// Loaded when purge needs it: the config's reader brings the runtime's modules, a second of start-up
// every other audit command (verify above all) would pay.
const configRetention = async (io: CliIo) => (await import("./upstreams")).loadCliConfig(undefined, io, "audit purge")?.retention.days ?? null;

const defaultDeps: AuditCommandDeps = {
  // Reading the log never creates a database: no database where it looks is an error naming the place.
  withDatabase: (fn) => withCliDatabase((db) => fn(db), { mustExist: true }),
  checkpoints: checkpointConfigFromEnv,
};

function printOutcome(io: CliIo, { report, checkpointFile }: VerificationOutcome, json: boolean): number {
  if (json) {
    const tree = report.tree && { size: report.tree.size, rootHash: report.tree.root.toString("hex") };
    io.stdout(JSON.stringify({ ...report, tree, checkpointFile }, null, 2) + "\n");
  } else if (report.ok) {
    io.stdout(
      `OK: ${report.eventsChecked} event(s) verified${report.from ? ` from #${report.from}` : " from genesis"}, ` +
        `${report.sealsChecked} tool-call seal(s), the content of ${report.runsContentChecked} run(s), ${report.checkpointsChecked} checkpoint(s), in ${report.durationMs} ms.\n` +
        (report.runsNotCovered
          ? `${report.runsNotCovered} run(s) stored before content digests existed: their content is not covered (chain and seals only).\n`
          : "") +
        (report.head ? `Head: #${report.head.id} ${report.head.hash} (${report.head.at})\n` : report.from ? "" : "The log is empty.\n") +
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

/** --as EMAIL, when given, must be an email (the person is looked up later: an unknown one is refused with exit 1). */
const asEmail = (value: string | undefined) => (value === undefined ? undefined : emailFlag(value, "--as", AUDIT_USAGE));

/** Refuses, before anything is verified (or recorded), a verification from an id past the log's last event, which would check nothing. */
async function refusePastEnd(db: Db, from: bigint): Promise<void> {
  const { _max } = await db.auditEvent.aggregate({ _max: { id: true } });
  const last = _max.id;
  if (last !== null && from <= last) return;
  throw new AppError("bad_request", `--from ${from} is past the log's last event (${last === null ? "the log is empty" : `#${last}`}); nothing was verified.`);
}

async function verify(args: string[], io: CliIo, deps: AuditCommandDeps): Promise<number> {
  const { values } = parseCliArgs(args, { from: { type: "string" }, json: { type: "boolean" }, as: { type: "string" } }, AUDIT_USAGE);
  let from: bigint | undefined;
  if (values.from !== undefined) {
    if (!/^[1-9]\d{0,18}$/.test(values.from))
      throw new UsageError(`--from must be an event id (a positive whole number), not ${typed(values.from)}`, AUDIT_USAGE);
    from = BigInt(values.from);
  }
  const as = asEmail(values.as);
  const outcome = await deps.withDatabase(async (db) => {
    if (from !== undefined) await refusePastEnd(db, from);
    return asCliActor(db, as, "cli:audit verify", (actor) => runVerification(db, actor, deps.checkpoints(), { from }));
  });
  return printOutcome(io, outcome, values.json === true);
}

async function checkpoint(args: string[], io: CliIo, deps: AuditCommandDeps): Promise<number> {
  const { values } = parseCliArgs(args, { json: { type: "boolean" }, bootstrap: { type: "boolean" }, as: { type: "string" } }, AUDIT_USAGE);
  const as = asEmail(values.as);
  const outcome = await deps.withDatabase((db) =>
    asCliActor(db, as, "cli:audit checkpoint", (actor) => checkpointAudited(db, actor, deps.checkpoints(), { bootstrap: values.bootstrap === true })),
  );
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
      "per-run": { type: "boolean" },
      "no-audit-reads": { type: "boolean" },
      as: { type: "string" },
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
  const { since, until } = parsed.data;
  if (since && until && since > until) {
    throw new UsageError(`--since ${values.since} is after --until ${values.until}: no time is in that range; give the earlier time to --since`, AUDIT_USAGE);
  }
  const as = asEmail(values.as);
  if (values["per-run"] && values["no-audit-reads"]) throw new UsageError("--no-audit-reads applies to event rows, not --per-run", AUDIT_USAGE);
  const options = {
    rows: values["per-run"] ? ("runs" as const) : ("events" as const),
    excludeAuditReads: values["no-audit-reads"] === true,
  };
  // Where the manifest goes is checked before anything is exported: a refusal after the stream would leave an export without it.
  if (values.manifest) {
    const where = resolve(values.manifest);
    await access(dirname(where), constants.W_OK).catch((error: Error) => {
      throw new AppError("bad_request", `--manifest ${values.manifest}: cannot write there (${error.message}); nothing was exported.`);
    });
  }
  const manifest = await deps.withDatabase((db) =>
    asCliActor(db, as, "cli:audit export", async (actor) => {
      const prepared = await exportAudited(db, actor, parsed.data, format as ExportFormat, options);
      for await (const chunk of prepared.rows) io.stdout(chunk);
      return prepared.manifest;
    }),
  );
  if (values.manifest) await writeFile(values.manifest, JSON.stringify(manifest, null, 2) + "\n");
  if (format === "csv" && !values.manifest) io.stderr(`manifest: ${JSON.stringify(manifest)}\n`);
  io.stderr(
    `Exported ${manifest.rowCount} ${manifest.rows === "runs" ? "run" : "event"}(s)${manifest.chainHead ? `; chain head #${manifest.chainHead.id} ${manifest.chainHead.hash}` : ""}.\n`,
  );
  return 0;
}

const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/;

async function purge(args: string[], io: CliIo, deps: AuditCommandDeps): Promise<number> {
  const { values } = parseCliArgs(args, { "as-of": { type: "string" }, json: { type: "boolean" } }, AUDIT_USAGE);
  const asOf = values["as-of"] === undefined ? new Date() : new Date(values["as-of"]);
  if (values["as-of"] !== undefined && (!ISO_TIME.test(values["as-of"]) || Number.isNaN(asOf.getTime()))) {
    throw new UsageError("--as-of must be an ISO 8601 time with a zone, such as 2026-01-31T00:00:00Z", AUDIT_USAGE);
  }
  // Well formed, and refused for what it says: a value the command refuses (exit 1), not a usage error.
  if (asOf.getTime() > Date.now()) throw new AppError("bad_request", "--as-of must not be in the future: retention purges what a past instant allows.");
  const days = await (deps.retention ?? configRetention)(io);
  if (!days) return 1;
  const summary = await deps.withDatabase((db) => purgeExpired(db, { asOf, days }));
  if (values.json) io.stdout(JSON.stringify(summary, null, 2) + "\n");
  else
    io.stdout(
      `Retention as of ${summary.asOf}: purged ${summary.fieldsPurged} field(s) and ${summary.toolCallsPurged} tool call(s) of ${summary.runsPurged} run(s)` +
        `${summary.runsHeld ? `; ${summary.runsHeld} run(s) past their window kept by a legal hold` : ""}` +
        `${summary.tokensPurged ? `; deleted the values of ${summary.tokensPurged} personal-data token(s)` : ""}.\n`,
    );
  return 0;
}

/**
 * Runs `fn` as cliActor (the enabled user --as names, else cli:<os user>@<host>); a refusal of
 * that person by the service is recorded as `auth.forbidden` at `door`.
 */
async function asCliActor<T>(db: Db, email: string | undefined, door: string, fn: (actor: Actor) => Promise<T>): Promise<T> {
  const actor = await cliActor(db, email);
  try {
    return await fn(actor);
  } catch (error) {
    await recordForbidden(db, actor, error, door);
    throw error;
  }
}

async function hold(args: string[], io: CliIo, deps: AuditCommandDeps): Promise<number> {
  const { values } = parseCliArgs(
    args,
    { run: { type: "string" }, agent: { type: "string" }, reason: { type: "string" }, as: { type: "string" } },
    AUDIT_USAGE,
  );
  if ((values.run === undefined) === (values.agent === undefined)) throw new UsageError("give exactly one of --run ID and --agent NAME", AUDIT_USAGE);
  if (!values.reason?.trim()) throw new UsageError("--reason is required", AUDIT_USAGE);
  const reason = values.reason;
  const target = values.run !== undefined ? { runId: uuidFlag(values.run, "--run", "a run id", AUDIT_USAGE), reason } : { agentName: values.agent!, reason };
  const as = asEmail(values.as);
  const { holdId } = await namingFlags({ runId: "--run", agentName: "--agent", reason: "--reason" }, () =>
    deps.withDatabase((db) => asCliActor(db, as, "cli:audit hold", (actor) => db.$transaction((tx) => placeHold(tx, actor, target)))),
  );
  io.stdout(`Legal hold ${holdId} placed on ${values.run !== undefined ? `run ${values.run}` : `agent ${values.agent}`}.\n`);
  return 0;
}

async function release(args: string[], io: CliIo, deps: AuditCommandDeps): Promise<number> {
  const { values } = parseCliArgs(args, { hold: { type: "string" }, reason: { type: "string" }, as: { type: "string" } }, AUDIT_USAGE);
  if (!values.hold) throw new UsageError("--hold ID is required", AUDIT_USAGE);
  if (!values.reason?.trim()) throw new UsageError("--reason is required", AUDIT_USAGE);
  const input = { holdId: uuidFlag(values.hold, "--hold", "a legal hold's id", AUDIT_USAGE), reason: values.reason };
  const as = asEmail(values.as);
  await namingFlags({ holdId: "--hold", reason: "--reason" }, () =>
    deps.withDatabase((db) => asCliActor(db, as, "cli:audit release", (actor) => db.$transaction((tx) => releaseHold(tx, actor, input)))),
  );
  io.stdout(`Legal hold ${values.hold} released.\n`);
  return 0;
}

async function evidence(args: string[], io: CliIo, deps: AuditCommandDeps): Promise<number> {
  const { values, positionals } = parseCliArgs(args, { as: { type: "string" } }, AUDIT_USAGE, { allowPositionals: true });
  if (positionals.length !== 1) throw new UsageError("give exactly one RUN_ID", AUDIT_USAGE);
  const runId = uuidFlag(positionals[0]!, "RUN_ID", "a run id", AUDIT_USAGE);
  const as = asEmail(values.as);
  const file = await deps.withDatabase((db) =>
    asCliActor(db, as, "cli:audit evidence", (actor) => exportEvidenceAudited(db, actor, deps.checkpoints(), runId)),
  );
  io.stdout(JSON.stringify(file, null, 2) + "\n");
  const head = file.proof.treeHead;
  io.stderr(
    `Evidence for run ${runId}: ${file.events.length} event(s) proven in the tree head of ${head.at} (${head.treeSize} events), ` +
      `${file.content.toolCalls.length} tool call(s), ${file.content.reviews.length} review(s). Check it with: airlock audit verify-evidence FILE\n`,
  );
  return 0;
}

async function publicKey(args: string[], io: CliIo, deps: AuditCommandDeps): Promise<number> {
  parseCliArgs(args, {}, AUDIT_USAGE);
  const { keyFile } = deps.checkpoints();
  await readFile(keyFile, "utf8").catch((error: Error) => {
    throw new UsageError(`cannot read the signing key ${keyFile}: ${error.message}`, AUDIT_USAGE);
  });
  // A file that is there but not the key is a refused value, named with its variable.
  const key = await loadSigningKey(keyFile).catch((error: Error) => {
    throw new AppError("bad_request", error.message);
  });
  io.stdout(key.publicKey.export({ type: "spki", format: "pem" }).toString());
  return 0;
}

/**
 * The public key to check signatures with: --public-key, else the signing key's, when its file is
 * here; null for none. A --public-key file that is no Ed25519 public key is a UsageError naming it.
 */
async function evidenceKey(pemFile: string | undefined, deps: AuditCommandDeps): Promise<KeyObject | null> {
  const file = pemFile ?? deps.checkpoints().keyFile;
  let pem: string;
  try {
    pem = await readFile(file, "utf8");
  } catch (error) {
    if (pemFile === undefined && (error as NodeJS.ErrnoException).code === "ENOENT") return null;
    // A file that cannot be read is a refused value (exit 1), as in exec and policy validate; one that is not a key is a wrong argument.
    throw new AppError("bad_request", `cannot read the public key ${file}: ${(error as Error).message}`);
  }
  let key: KeyObject | null = null;
  try {
    key = createPublicKey(pem);
  } catch {
    // OpenSSL's DECODER error says nothing an operator can act on: the file is named instead.
  }
  if (key?.asymmetricKeyType === "ed25519") return key;
  const is = key ? `is a ${key.asymmetricKeyType} key, not Ed25519` : "is not a public key (PEM)";
  if (pemFile !== undefined) {
    throw new UsageError(`the file given to --public-key, ${pemFile}, ${is}; give the one airlock audit public-key prints`, AUDIT_USAGE);
  }
  throw new AppError("bad_request", `the audit signing key ${file} (AIRLOCK_AUDIT_KEY_FILE) ${is}; restore the key file, or pass --public-key PEM`);
}

function printVerdict(io: CliIo, verdict: EvidenceVerdict): number {
  const { evidence: file, problems, notes } = verdict;
  const head = file.proof.treeHead;
  const latest = file.proof.latestTreeHead;
  const lines = notes.map((note) => `note: ${note}\n`).join("");
  if (verdict.status === "mismatch") {
    io.stderr(`MISMATCH: run ${file.run.id}: ${problems.length} value(s) do not match:\n${problems.map((p) => `  ${p}\n`).join("")}${lines}`);
    return 1;
  }
  const proven =
    `${file.events.length} event(s) proven in the tree head of ${head.at} (${head.treeSize} events), consistent with the head of ${latest.at} ` +
    `(${latest.treeSize} events); content, ${file.content.toolCalls.length} tool call(s), ${file.content.reviews.length} review(s), the policy ` +
    `and ${file.content.outcomes.length} outcome(s) match them`;
  io.stdout(
    verdict.status === "ok"
      ? `OK: run ${file.run.id}: ${proven}; signed by key ${head.keyId}.\n${lines}`
      : `UNANCHORED: run ${file.run.id}: ${proven} — but no public key was given, so nothing ties the tree heads to Airlock's signing key (pass --public-key PEM).\n${lines}`,
  );
  return 0;
}

/** Offline: reads the file and a key, never the database. */
async function verifyEvidence(args: string[], io: CliIo, deps: AuditCommandDeps): Promise<number> {
  const { values, positionals } = parseCliArgs(args, { "public-key": { type: "string" } }, AUDIT_USAGE, { allowPositionals: true });
  if (positionals.length !== 1) throw new UsageError("give exactly one evidence FILE", AUDIT_USAGE);
  const path = positionals[0]!;
  const text = await readFile(path, "utf8").catch((error: Error) => {
    throw new AppError("bad_request", `cannot read ${path}: ${error.message}`);
  });
  const key = await evidenceKey(values["public-key"], deps);
  try {
    return printVerdict(io, verifyRunEvidence(parseEvidence(text), key));
  } catch (error) {
    if (!(error instanceof EvidenceFormatError)) throw error;
    io.stderr(`NOT EVIDENCE: ${path}: ${error.message}\n`);
    return 1;
  }
}

/** The checkpoint that anchors an export, checked against the key; a file that is not one is refused (exit 1). */
async function exportAnchor(checkpointFile: string | undefined, pemFile: string | undefined, deps: AuditCommandDeps): Promise<Anchor | null> {
  if (checkpointFile === undefined) {
    if (pemFile !== undefined) throw new UsageError("--public-key checks the signature of a --checkpoint FILE; give one", AUDIT_USAGE);
    return null;
  }
  const text = await readFile(checkpointFile, "utf8").catch((error: Error) => {
    throw new AppError("bad_request", `cannot read ${checkpointFile}: ${error.message}`);
  });
  const publicKey = await evidenceKey(pemFile, deps);
  if (!publicKey)
    throw new UsageError("a checkpoint is checked with the signing key's public half: pass --public-key PEM (airlock audit public-key prints it)", AUDIT_USAGE);
  const checked = checkCheckpoint(text, publicKey);
  if (!checked.valid) throw new AppError("bad_request", `the checkpoint ${checkpointFile} cannot anchor anything: ${checked.problem}`);
  return { checkpoint: checked.checkpoint, publicKey };
}

function printExportVerdict(io: CliIo, path: string, verdict: ExportVerdict): number {
  const { problems, notes, events, gaps } = verdict;
  const lines = notes.map((note) => `note: ${note}\n`).join("");
  if (verdict.status === "mismatch") {
    io.stderr(`MISMATCH: ${path}: ${problems.length} problem(s):\n${problems.map((p) => `  ${p}\n`).join("")}${lines}`);
    return 1;
  }
  const checked =
    `${events} event(s): hashes, ${gaps === 0 ? "one unbroken chain" : `the chain between them (${gaps} gap(s): a filtered export)`}, ` +
    `the manifest, and ${verdict.toolCallSeals} tool-call seal(s) and the runs' content against their digests`;
  const anchored = verdict.anchoredThrough;
  io.stdout(
    anchored
      ? `OK: ${path}: ${checked}; every event from genesis to #${anchored.eventId} is the log the checkpoint of ${anchored.signedAt} signed (key ${anchored.keyId}).\n${lines}`
      : `UNANCHORED: ${path}: ${checked} — but no signed checkpoint ties them to Airlock's signing key (pass --checkpoint FILE and --public-key PEM): the file is consistent with itself, which anyone could have made so.\n${lines}`,
  );
  return 0;
}

/** Offline: reads the export, a checkpoint and a key, never the database. */
async function verifyExport(args: string[], io: CliIo, deps: AuditCommandDeps): Promise<number> {
  const { values, positionals } = parseCliArgs(args, { checkpoint: { type: "string" }, "public-key": { type: "string" } }, AUDIT_USAGE, {
    allowPositionals: true,
  });
  if (positionals.length !== 1) throw new UsageError("give exactly one export FILE", AUDIT_USAGE);
  const path = positionals[0]!;
  // Opened first, so a file that cannot be read is named before anything else is checked.
  const file = await open(path).catch((error: Error) => {
    throw new AppError("bad_request", `cannot read ${path}: ${error.message}`);
  });
  try {
    const anchor = await exportAnchor(values.checkpoint, values["public-key"], deps);
    return printExportVerdict(io, path, await verifyAuditExport(file.createReadStream({ encoding: "utf8", autoClose: false }), anchor));
  } catch (error) {
    if (!(error instanceof ExportFormatError)) throw error;
    io.stderr(`NOT AN EXPORT: ${path}: ${error.message}\n`);
    return 1;
  } finally {
    await file.close();
  }
}

const SUBCOMMANDS = {
  verify,
  checkpoint,
  export: exportCommand,
  purge,
  hold,
  release,
  evidence,
  "public-key": publicKey,
  "verify-evidence": verifyEvidence,
  "verify-export": verifyExport,
} as const satisfies Record<string, (args: string[], io: CliIo, deps: AuditCommandDeps) => Promise<number>>;

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
