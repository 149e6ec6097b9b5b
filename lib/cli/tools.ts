/**
 * `airlock tools`: lists the configured upstreams' tools (with annotations, data class and
 * quarantine state with the hash of the definition served; annotations and data classes as two
 * admins' overrides set them), prints their TypeScript declarations (`--dts`) or searches them
 * (`--search Q`, `--detail name|summary|full`), as text, or as JSON with `--json`. Quarantine is
 * decided by the tool pins in the database, as for the server (./upstreams.ts): a tool nobody
 * accepted — changed, added by its
 * upstream, or of a server added after first start — is quarantined (lib/broker/db-registry.ts);
 * like the server at start, it records what it listed in the tool registry; it calls no tool.
 * `--detail` without `--search`, and `--json` with `--dts` (declarations have no JSON form), are
 * refused rather than ignored.
 * `airlock tools accept` is one admin's acceptance (named with --as EMAIL, ./person.ts) of a
 * quarantined definition by its hash: the first asks, a second admin's pins it
 * (lib/broker/admin.ts); it connects no upstream. Exit 0, 1 when the config, an upstream or the
 * acceptance fails, 2 for bad arguments.
 */
import type { SearchDetail, ToolInfo } from "@/lib/broker";
import { acceptTool } from "@/lib/broker/admin";
import { withCliDatabase } from "./database";
import { emailFlag, exitOnUsageError, parseCliArgs, typed, UsageError, type CliIo } from "./io";
import { actingAs } from "./person";
import { loadCliConfig, withCliBroker } from "./upstreams";

export const TOOLS_USAGE = `Usage: airlock tools [--server S] [--dts | --search Q [--detail name|summary|full]] [--json] [--config PATH]
       airlock tools accept --server S --tool T --hash HASH --as ADMIN_EMAIL   (asks; a second admin's accept pins it)
`;

const DETAILS = ["name", "summary", "full"] as const;

const badArgs = (message: string) => new UsageError(message, TOOLS_USAGE, "tools");

function effect(tool: ToolInfo): string {
  const a = tool.annotations;
  const parts = [a.readOnlyHint ? "read-only" : a.destructiveHint === false ? "write" : "destructive"];
  if (a.idempotentHint) parts.push("idempotent");
  if (a.openWorldHint) parts.push("open-world");
  return parts.join(", ");
}

async function acceptCommand(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseCliArgs(
    argv,
    { server: { type: "string" }, tool: { type: "string" }, hash: { type: "string" }, as: { type: "string" } },
    TOOLS_USAGE,
    { command: "tools accept" },
  );
  const required = (flag: keyof typeof values) => {
    const value = values[flag];
    if (typeof value !== "string" || value.trim() === "") throw badArgs(`--${flag} is required`);
    return value;
  };
  const [server, tool, hash, as] = [required("server"), required("tool"), required("hash"), required("as")];
  if (!/^[0-9a-f]{64}$/.test(hash)) throw badArgs("--hash must be the tool's 64-character hash, as `airlock tools` lists it");
  emailFlag(as, "--as", TOOLS_USAGE, "tools accept");
  const result = await withCliDatabase((db) => actingAs(db, as, "cli:tools accept", (actor) => acceptTool(db, actor, { server, tool, schemaHash: hash })));
  io.stdout(
    result.outcome === "accepted"
      ? `Accepted ${server}.${tool}: its definition is pinned and the quarantine lifted.\n`
      : `Asked to accept ${server}.${tool}; a second admin's accept of the same hash pins it.\n`,
  );
  return 0;
}

export async function toolsCommand(argv: string[], io: CliIo): Promise<number> {
  if (argv[0] === "accept") return exitOnUsageError(io, () => acceptCommand(argv.slice(1), io));
  return exitOnUsageError(io, async () => {
    const { values } = parseCliArgs(
      argv,
      {
        server: { type: "string" },
        dts: { type: "boolean", default: false },
        search: { type: "string" },
        detail: { type: "string" },
        json: { type: "boolean", default: false },
        config: { type: "string" },
      },
      TOOLS_USAGE,
      { command: "tools" },
    );
    if (values.detail !== undefined && !(DETAILS as readonly string[]).includes(values.detail)) {
      throw badArgs(`--detail must be one of ${DETAILS.join(", ")}, not ${typed(values.detail)}`);
    }
    if (values.dts && values.search !== undefined) throw badArgs("use --dts or --search, not both");
    if (values.detail !== undefined && values.search === undefined) throw badArgs("--detail says how much --search answers: it needs --search Q");
    if (values.dts && values.json) throw badArgs("--dts prints TypeScript declarations, which have no JSON form: use --dts or --json, not both");
    const config = loadCliConfig(values.config, io, "tools");
    if (!config) return 1;
    if (values.server !== undefined && !(values.server in config.servers)) throw badArgs(`no server '${values.server}' in the config`);
    return withCliBroker(config, io, "tools", async (broker) => {
      if (values.dts) {
        io.stdout(broker.declarations(values.server));
      } else if (values.search !== undefined) {
        const answer = broker.search(values.search, (values.detail ?? "summary") as SearchDetail, { server: values.server });
        if (values.json) io.stdout(`${JSON.stringify(answer, null, 2)}\n`);
        else if (answer.tools.length === 0) io.stdout(`No tool matches ${JSON.stringify(values.search)}.\n`);
        else {
          for (const hit of answer.tools) io.stdout(`${hit.server}.${hit.name}${hit.summary ? `  ${hit.summary}` : ""}\n`);
          if (answer.declaration) io.stdout(`\n${answer.declaration}\n`);
        }
      } else {
        const tools = broker.tools(values.server);
        if (values.json) io.stdout(`${JSON.stringify(tools, null, 2)}\n`);
        else {
          for (const t of tools) {
            const state = t.quarantined ? ` QUARANTINED (${t.quarantineReason}, hash ${t.hash})` : "";
            io.stdout(`${t.server}.${t.name}  [${effect(t)}] ${t.dataClass}${state}\n    ${t.description.split("\n")[0]}\n`);
          }
        }
      }
      return 0;
    });
  });
}
