/**
 * call_tool, the direct lane: one call of one upstream tool accepted as read-only, with no script
 * to write and no sandbox to start. The one service function behind the MCP tool.
 *
 * Guarantees:
 * - only a registered tool that is not quarantined and whose accepted facts say it only reads
 *   (its pinned readOnlyHint, or an override two admins confirmed) is called; any other is refused
 *   with USE_SUBMIT_RUN saying why, before anything is stored. An unknown tool is a bad request
 *   naming search_tools;
 * - the call is a Run of kind `direct` whose code is the call written as a script
 *   (lib/contracts/direct-call.ts), so analysis, the Cedar request, the audit log, the console and
 *   evidence see it as they see any script, and the executor makes exactly that call;
 * - policy decides on Action::"call" with the run policies. Allowed: executed at once. Denied:
 *   stored denied with its reasons, like a script. One that policy would send to reviewers is
 *   refused with USE_SUBMIT_RUN and the reasons: nothing waits for review in this lane;
 * - validation, budgets, idempotency, refusals (`run.refused`), the tool-call seal and the result
 *   gate are submit_run's own (./submit.ts, lib/runs/executor.ts);
 * - arguments holding a `__proto__` key are refused (a script's object literal reads it as the
 *   prototype, so the script would not say what the call sends).
 */
import { z } from "zod";
import { UNAVAILABLE_RETRY_MS } from "@/lib/broker";
import { canonicalJson } from "@/lib/canonical-json";
import { requireScope } from "@/lib/contracts/scopes";
import { directCallScript, toolArgumentsSchema } from "@/lib/contracts/direct-call";
import { isReadOnly, quarantineText, splitToolName } from "@/lib/contracts/tools";
import { AppError, echoedText, invalidArguments } from "@/lib/errors";
import type { AgentActor, RunDeps, RunView } from "@/lib/runs/service";
import { DirectCallRefused, parseSubmit, recordingRefusals, submitProposal, type Lane, type SubmitOptions } from "./submit";
import { storableText } from "@/lib/untrusted/storable-text";

const DIRECT_LANE: Lane = { kind: "direct", action: "call" };

/** One read-only call needs no purpose, key or provenance of its own: its run says "Direct call of server.tool". */
export const callToolSchema = z.strictObject({
  server: z.string().max(64).superRefine(storableText),
  tool: z.string().max(128).superRefine(storableText),
  arguments: toolArgumentsSchema,
});

export type CallToolInput = z.input<typeof callToolSchema>;

/** `{ tool: "ledger.listInvoices" }` without a server, said as what to send instead; null for other refusals. */
function splitNameRefusal(raw: unknown): AppError | null {
  const given = raw !== null && typeof raw === "object" ? (raw as Record<string, unknown>) : {};
  if (given.server !== undefined || typeof given.tool !== "string") return null;
  const { server, tool } = splitToolName(given.tool.replace(/^tools\./, ""));
  if (!server || !tool || server.length > 64 || tool.length > 128) return null;
  const [named, serverPart, toolPart] = [given.tool, server, tool].map((text) => JSON.stringify(echoedText(text, 140)));
  return new AppError("bad_request", `server: required; tool ${named} names both: send server ${serverPart} and tool ${toolPart}`, {
    details: { field: "server" },
  });
}

export async function submitDirectCall(deps: RunDeps, actor: AgentActor, raw: unknown, options: Pick<SubmitOptions, "wait" | "follow"> = {}): Promise<RunView> {
  return recordingRefusals(deps.db, actor, raw, async () => {
    requireScope(actor, "runs:submit");
    const parsed = callToolSchema.safeParse(raw);
    if (!parsed.success) throw splitNameRefusal(raw) ?? invalidArguments(parsed.error);
    const { server, tool, arguments: args } = parsed.data;

    // An override two admins confirmed in another process counts here too.
    await deps.registry.refresh();
    const name = `${server}.${tool}`;
    const facts = deps.registry.toolFacts().find((t) => t.server === server && t.name === tool);
    if (!facts && deps.registry.unavailableServers().includes(server)) {
      throw new DirectCallRefused(
        `${name} cannot be called: upstream '${server}' is unavailable (Airlock could not connect to it; it is tried every ${UNAVAILABLE_RETRY_MS / 1000} s).`,
        undefined,
        "Try again later, and tell the user if it persists.",
      );
    }
    if (!facts) throw new AppError("bad_request", `${name} is not a tool; search_tools lists the tools that exist.`, { details: { field: "tool" } });
    if (facts.quarantined) {
      throw new DirectCallRefused(
        `${name} may not be called: ${quarantineText(facts.quarantineReason)}.`,
        undefined,
        "A script calling it is denied too: tell the user an admin must accept it first (the Tools page).",
      );
    }
    if (!isReadOnly(facts.annotations)) throw new DirectCallRefused(`${name} is not accepted as read-only: it may change data.`);

    const input = parseSubmit(
      {
        code: directCallScript(server, tool, args),
        purpose: `Direct call of ${name}`,
        language: "javascript",
        inputs: [],
      },
      { text: canonicalJson(args), origin: "arguments" },
    );
    return submitProposal(deps, actor, input, options, DIRECT_LANE);
  });
}
