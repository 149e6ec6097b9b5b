/**
 * `airlock` command line. Every command validates its arguments (parseCliArgs: node:util parseArgs,
 * strict; a flag's value against its form, ./io.ts) and prints its usage with exit code 2 when they
 * are wrong (UsageError), naming the flag and what was typed; `--help` prints the command's usage
 * and exits 0 (the global usage for no command); typed failures print one line (a service's field
 * named as the flag, namingFlags) and exit 1; success exits 0. Commands act as CLI_ACTOR (`system:cli`) — whoever can run
 * this has the host's database credentials already — and every change they make is audited like
 * any other; the four-eyes commands (policy propose and approve, tools accept) act as the admin
 * named by --as EMAIL instead (./person.ts). The shared pieces are in ./io.ts.
 */
import { AGENT_SCOPES, createAgent, listAgents } from "@/lib/auth/agents";
import { generatePassword } from "@/lib/auth/passwords";
import { ROLES, type Role } from "@/lib/contracts/scopes";
import { createUser } from "@/lib/auth/users";
import { AppError, isAppError } from "@/lib/errors";
import { logOnlyWhenAsked } from "@/lib/log";
import { withCliDatabase } from "./database";
import { CLI_ACTOR, emailFlag, exitOnUsageError, namingFlags, parseCliArgs, processIo, requiredFlag, UsageError, wholeNumberFlag, type CliIo } from "./io";

const USAGE = `Usage: airlock <command> [options]

Commands:
  user add --email E --role admin|reviewer|compliance [--name N] [--password-stdin]
  agent add --name N --owner EMAIL [--scopes runs:submit,runs:read,tools:read,inputs:read] [--expires-days D]
  agent revoke --name N
  agent list [--json]
  db migrate
  db seed
  exec --agent NAME [--as EMAIL] [--input DATASET]... [--purpose TEXT] [--wait] [--json] FILE   (policy, review, audit; exit 3: waits for reviewers)
  exec --dev [--config PATH] [--input NAME=PATH]... [--allow SERVER.TOOL,...|--allow-all] [--isolation strict|permission-only] [--timeout-ms N] [--json] FILE
  tools [--server S] [--dts | --search Q]
  tools accept --server S --tool T --hash HASH --as ADMIN_EMAIL            (asks; a second admin's accept pins it)
  policy validate|replay --file draft.cedar [--last N] [--json]
  policy propose --file draft.cedar --as ADMIN_EMAIL                         (publish is an alias: it proposes)
  policy approve --version N --as OTHER_ADMIN_EMAIL                          (publishes it; not the proposer)
  audit verify [--from ID] [--json] | audit checkpoint | audit export --format jsonl|csv [filters]
  audit purge [--as-of TIME] | audit hold --run ID|--agent NAME --reason TEXT | audit release --hold ID --reason TEXT
  audit evidence RUN_ID > run.evidence.json | audit verify-evidence FILE [--public-key PEM]   (offline)
  audit verify-export FILE [--checkpoint FILE --public-key PEM]             (offline: a JSONL events export)
  doctor [--json]                                                             (checks this deployment; exit 1 on a FAIL)
  skills patterns [--min N] [--json]                                          (runs grouped by script structure)
  skills list [--json] | skills revoke --standing ID --as ADMIN_EMAIL         (skills, standing approvals; revoke at once)

Without DATABASE_URL the commands use the embedded database under AIRLOCK_DATA_DIR (default ./.airlock).
`;

type Command = (args: string[], io: CliIo) => Promise<number>;

const userAdd: Command = async (args, io) => {
  const usage = "Usage: airlock user add --email E --role admin|reviewer|compliance [--name N] [--password-stdin]\n";
  const { values } = parseCliArgs(
    args,
    {
      email: { type: "string" },
      role: { type: "string" },
      name: { type: "string" },
      "password-stdin": { type: "boolean" },
    },
    usage,
  );
  const email = emailFlag(requiredFlag(values.email, "--email", usage), "--email", usage);
  const role = requiredFlag(values.role, "--role", usage);
  if (!(ROLES as readonly string[]).includes(role)) throw new UsageError(`--role must be one of ${ROLES.join(", ")}`, usage);
  const password = values["password-stdin"] ? (await io.readStdin()).replace(/\r?\n$/, "") : generatePassword();
  const flags = { email: "--email", role: "--role", name: "--name", password: "the password read by --password-stdin" };
  const user = await namingFlags(flags, () =>
    withCliDatabase((db) => db.$transaction((tx) => createUser(tx, CLI_ACTOR, { email, role: role as Role, name: values.name, password }))),
  );
  io.stdout(`Added ${user.role} ${user.email}.\n`);
  if (!values["password-stdin"]) io.stdout(`Password (shown once): ${password}\n`);
  return 0;
};

const agentAdd: Command = async (args, io) => {
  const usage = "Usage: airlock agent add --name N --owner EMAIL [--scopes a,b,...] [--expires-days D]\n";
  const { values } = parseCliArgs(
    args,
    {
      name: { type: "string" },
      owner: { type: "string" },
      scopes: { type: "string" },
      "expires-days": { type: "string" },
    },
    usage,
  );
  const name = requiredFlag(values.name, "--name", usage);
  const owner = emailFlag(requiredFlag(values.owner, "--owner", usage), "--owner", usage);
  const days = wholeNumberFlag(values["expires-days"], "--expires-days", { min: 1, max: 3650 }, usage);
  const expiresAt = days === undefined ? undefined : new Date(Date.now() + days * 86_400_000);
  const scopes = values.scopes
    ?.split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = scopes?.find((scope) => !(AGENT_SCOPES as readonly string[]).includes(scope));
  if (unknown !== undefined) throw new AppError("bad_request", `--scopes: "${unknown}" is not an agent's scope; they are ${AGENT_SCOPES.join(", ")}`);
  const flags = { name: "--name", ownerEmail: "--owner", scopes: "--scopes", expiresAt: "--expires-days" };
  const created = await namingFlags(flags, () =>
    withCliDatabase((db) => db.$transaction((tx) => createAgent(tx, CLI_ACTOR, { name, ownerEmail: owner, scopes: scopes as never, expiresAt }))),
  );
  io.stdout(`Added agent ${created.name} (scopes: ${created.scopes.join(", ")}).\n`);
  io.stdout(`Token (shown once, store it now): ${created.token}\n`);
  return 0;
};

const agentRevoke: Command = async (args, io) => {
  const usage = "Usage: airlock agent revoke --name N\n";
  const { values } = parseCliArgs(args, { name: { type: "string" } }, usage);
  const name = requiredFlag(values.name, "--name", usage);
  // Loaded here: the runs' modules are start-up time every other command would pay.
  const { revokeAgentAndStopRuns } = await import("@/lib/runs/cancel");
  const result = await withCliDatabase((db) => db.$transaction((tx) => revokeAgentAndStopRuns(tx, CLI_ACTOR, name)));
  io.stdout(`Revoked agent ${name} and ${result.revokedTokens} token(s).\n`);
  return 0;
};

const agentList: Command = async (args, io) => {
  const usage = "Usage: airlock agent list [--json]\n";
  const { values } = parseCliArgs(args, { json: { type: "boolean" } }, usage);
  const agents = await withCliDatabase((db) => listAgents(db), { mustExist: true });
  if (values.json) {
    io.stdout(JSON.stringify(agents, null, 2) + "\n");
  } else if (agents.length === 0) {
    io.stdout("No agents.\n");
  } else {
    for (const agent of agents) {
      io.stdout(`${agent.name}\towner=${agent.owner}\t${agent.revokedAt ? "revoked" : "active"}\n`);
    }
  }
  return 0;
};

const dbMigrate: Command = async (args, io) => {
  parseCliArgs(args, {}, "Usage: airlock db migrate\n");
  const applied = await withCliDatabase(async (_db, { appliedMigrations }) => appliedMigrations);
  io.stdout(applied.length === 0 ? "Database is up to date.\n" : `Applied migrations: ${applied.join(", ")}\n`);
  return 0;
};

const dbSeed: Command = async (args, io) => {
  parseCliArgs(args, {}, "Usage: airlock db seed\n");
  const { seedDemo } = await import("@/lib/demo/seed");
  const { env } = await import("@/lib/env");
  const credentials = await withCliDatabase((db) => seedDemo(db, { password: env().AIRLOCK_DEMO_PASSWORD }));
  if (!credentials) {
    io.stdout("The database already has users; nothing seeded.\n");
    return 0;
  }
  for (const user of credentials.users) io.stdout(`${user.role}\t${user.email}\t${user.password}\n`);
  io.stdout(`agent\t${credentials.agent.name}\t${credentials.agent.token}\n`);
  return 0;
};

const COMMANDS: Record<string, Command> = {
  "user add": userAdd,
  "agent add": agentAdd,
  "agent revoke": agentRevoke,
  "agent list": agentList,
  "db migrate": dbMigrate,
  "db seed": dbSeed,
  exec: async (args, io) => (await import("./exec")).execCommand(args, io),
  tools: async (args, io) => (await import("./tools")).toolsCommand(args, io),
  policy: async (args, io) => (await import("./policy")).policyCommand(args, io),
  audit: async (args, io) => (await import("./audit")).auditCommand(args, io),
  "skills patterns": async (args, io) => (await import("./skills")).skillsPatternsCommand(args, io),
  "skills list": async (args, io) => (await import("./skills")).skillsListCommand(args, io),
  "skills revoke": async (args, io) => (await import("./skills")).skillsRevokeCommand(args, io),
  doctor: async (args, io) => (await import("./doctor")).doctorCommand(args, io),
};

export async function runCli(argv: string[], io: CliIo = processIo): Promise<number> {
  const [first, second, ...rest] = argv;
  const key = first && second && COMMANDS[`${first} ${second}`] ? `${first} ${second}` : first;
  const command = key ? COMMANDS[key] : undefined;
  // `help` first, or `-h`/`--help` among the words before any other flag with no command they
  // name, asks for the global usage; a command's own `--help` is its parser's (its usage, exit 0),
  // and after a flag it may be that flag's value (`--reason -h`).
  const firstFlag = argv.findIndex((arg) => arg.startsWith("-") && arg !== "-h" && arg !== "--help");
  const words = firstFlag === -1 ? argv : argv.slice(0, firstFlag);
  if (first === "help" || (!command && words.some((arg) => arg === "--help" || arg === "-h"))) {
    io.stdout(USAGE);
    return 0;
  }
  if (!command) {
    io.stderr(first ? `airlock: unknown command "${argv.slice(0, 2).join(" ")}"\n${USAGE}` : USAGE);
    return 2;
  }
  const args = key === first ? argv.slice(1) : rest;
  try {
    return await exitOnUsageError(io, () => command(args, io));
  } catch (error) {
    if (isAppError(error)) {
      io.stderr(`airlock: ${error.message}\n`);
      return 1;
    }
    io.stderr(`airlock: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  // A command's stdout is its answer: the run-change log (lib/log.ts) stays out of it.
  logOnlyWhenAsked();
  void runCli(process.argv.slice(2)).then((code) => process.exit(code));
}
