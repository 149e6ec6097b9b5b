/**
 * `airlock tools`: lists the configured upstreams' tools (with annotations, data class and
 * quarantine state), prints their TypeScript declarations (`--dts`) or searches them
 * (`--search Q`, `--detail name|summary|full`). Quarantine is decided by the tool pins in the
 * database, as for the server (./upstreams.ts): like the server at start, it pins tools seen for
 * the first time and records what it listed in the tool registry; it calls no tool. Exit 0, 1 when
 * the config or an upstream cannot be used, 2 for bad arguments.
 */
import type { SearchDetail, ToolInfo } from "@/lib/broker";
import { exitOnUsageError, parseCliArgs, UsageError, type CliIo } from "./io";
import { loadCliConfig, withCliBroker } from "./upstreams";

export const TOOLS_USAGE = `Usage: airlock tools [--server S] [--dts] [--search Q [--detail name|summary|full]] [--json] [--config PATH]
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

export async function toolsCommand(argv: string[], io: CliIo): Promise<number> {
  return exitOnUsageError(io, async () => {
    const { values } = parseCliArgs(
      argv,
      {
        server: { type: "string" },
        dts: { type: "boolean", default: false },
        search: { type: "string" },
        detail: { type: "string", default: "summary" },
        json: { type: "boolean", default: false },
        config: { type: "string" },
      },
      TOOLS_USAGE,
      { command: "tools" },
    );
    if (!(DETAILS as readonly string[]).includes(values.detail)) throw badArgs(`--detail must be one of ${DETAILS.join(", ")}`);
    if (values.dts && values.search !== undefined) throw badArgs("use --dts or --search, not both");
    const config = loadCliConfig(values.config, io, "tools");
    if (!config) return 1;
    if (values.server !== undefined && !(values.server in config.servers)) throw badArgs(`no server '${values.server}' in the config`);
    return withCliBroker(config, io, "tools", async (broker) => {
      if (values.dts) {
        io.stdout(broker.declarations(values.server));
      } else if (values.search !== undefined) {
        const hits = broker.search(values.search, values.detail as SearchDetail).filter((h) => !values.server || h.server === values.server);
        io.stdout(`${JSON.stringify(hits, null, 2)}\n`);
      } else {
        const tools = broker.tools(values.server);
        if (values.json) io.stdout(`${JSON.stringify(tools, null, 2)}\n`);
        else {
          for (const t of tools) {
            const state = t.quarantined ? ` QUARANTINED (${t.quarantineReason})` : "";
            io.stdout(`${t.server}.${t.name}  [${effect(t)}] ${t.dataClass}${state}\n    ${t.description.split("\n")[0]}\n`);
          }
        }
      }
      return 0;
    });
  });
}
