/**
 * `airlock tools`: lists the configured upstreams' tools (with annotations, data class and
 * quarantine state), prints their TypeScript declarations (`--dts`) or searches them
 * (`--search Q`, `--detail name|summary|full`). Read-only; exit 0, 1 when the config or an
 * upstream cannot be used, 2 for bad arguments.
 */
import { parseArgs } from "node:util";
import { ConfigError, JsonFilePinStore, ToolBroker, loadConfig, type SearchDetail, type ToolInfo } from "@/lib/broker";
import { resolveConfig } from "@/lib/runs/runtime";

type Io = { stdout: (s: string) => void; stderr: (s: string) => void };

export const TOOLS_USAGE = `Usage: airlock tools [--server S] [--dts] [--search Q [--detail name|summary|full]] [--json] [--config PATH]
`;

const DETAILS = ["name", "summary", "full"] as const;

function effect(tool: ToolInfo): string {
  const a = tool.annotations;
  const parts = [a.readOnlyHint ? "read-only" : a.destructiveHint === false ? "write" : "destructive"];
  if (a.idempotentHint) parts.push("idempotent");
  if (a.openWorldHint) parts.push("open-world");
  return parts.join(", ");
}

export async function toolsCommand(argv: string[], io: Io): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        server: { type: "string" },
        dts: { type: "boolean", default: false },
        search: { type: "string" },
        detail: { type: "string", default: "summary" },
        json: { type: "boolean", default: false },
        config: { type: "string" },
      },
    }));
    if (!(DETAILS as readonly string[]).includes(values.detail)) throw new Error(`--detail must be one of ${DETAILS.join(", ")}`);
    if (values.dts && values.search !== undefined) throw new Error("use --dts or --search, not both");
  } catch (error) {
    io.stderr(`airlock tools: ${(error as Error).message}\n\n${TOOLS_USAGE}`);
    return 2;
  }
  let broker: ToolBroker;
  try {
    const config = values.config ? loadConfig(values.config) : resolveConfig();
    if (values.server !== undefined && !(values.server in config.servers)) {
      io.stderr(`airlock tools: no server '${values.server}' in the config\n\n${TOOLS_USAGE}`);
      return 2;
    }
    broker = await ToolBroker.connect(config, { pins: new JsonFilePinStore(config.pins.file) });
  } catch (error) {
    io.stderr(`airlock tools: ${error instanceof ConfigError ? error.message : `upstreams unavailable: ${(error as Error).message}`}\n`);
    return 1;
  }
  try {
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
  } finally {
    await broker.close();
  }
}
