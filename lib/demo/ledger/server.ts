/**
 * The demo `ledger` upstream: a stdio MCP server (SDK McpServer) over deterministic data
 * (./data.ts). Read tools are annotated readOnlyHint; issueRefund is destructive and idempotent by
 * idempotency key; sendReminderEmail is open-world (it only records the email in an outbox);
 * updateCustomerEmail changes PII. Every tool declares an outputSchema and returns
 * structuredContent. State lives in memory, or in the JSON file given with `--state FILE` (so a
 * demo survives restarts); that file holds customers' personal data, so it is kept readable by its
 * owner only (0600, also an existing file), and replaced whole on every write (a kill mid-write
 * leaves the previous state). Run: `tsx lib/demo/ledger/server.ts [--seed N] [--state FILE]`.
 * It is a demo upstream, not part of Airlock's trust boundary: Airlock treats it as untrusted.
 */
import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { pathToFileURL } from "node:url";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";
import { CURRENCIES, INVOICE_STATUSES, REFUND_STATUSES, formatMinor, generateLedgerData, type LedgerData, type Refund } from "./data";

const currency = z.enum(Object.keys(CURRENCIES) as [keyof typeof CURRENCIES, ...(keyof typeof CURRENCIES)[]]);
const date = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/)
  .describe("ISO date, YYYY-MM-DD");
const customer = z.object({ id: z.string(), name: z.string(), email: z.string(), country: z.string(), currency, createdAt: date });
const invoice = z.object({
  id: z.string(),
  customerId: z.string(),
  currency,
  amountMinor: z.number().int().describe("Amount in minor units (cents; yen have none)"),
  amount: z.string().describe("Amount as a decimal string"),
  status: z.enum(INVOICE_STATUSES),
  issuedAt: date,
  dueAt: date,
});
const refund = z.object({
  id: z.string(),
  invoiceId: z.string(),
  currency,
  amountMinor: z.number().int(),
  amount: z.string(),
  reason: z.string(),
  status: z.enum(REFUND_STATUSES),
  createdAt: date,
});
const page = {
  limit: z.number().int().min(1).max(500).default(100).describe("Page size (max 500)"),
  cursor: z.string().optional().describe("nextCursor of the previous page"),
};

type State = LedgerData & { idempotency: Record<string, string>; outbox: { id: string; to: string; invoiceId: string; message: string; at: string }[] };

function paginate<T>(items: T[], limit: number, cursor?: string): { items: T[]; nextCursor: string | null } {
  const start = cursor ? Number.parseInt(cursor, 10) || 0 : 0;
  const end = start + limit;
  return { items: items.slice(start, end), nextCursor: end < items.length ? String(end) : null };
}

function result<T extends Record<string, unknown>>(structured: T) {
  return { content: [{ type: "text" as const, text: JSON.stringify(structured) }], structuredContent: structured };
}

function failure(message: string) {
  return { content: [{ type: "text" as const, text: message }], isError: true };
}

export function createLedgerServer(options: { seed?: number; statePath?: string } = {}): McpServer {
  const { statePath } = options;
  const stored = statePath !== undefined && existsSync(statePath);
  if (stored) chmodSync(statePath, 0o600);
  const state: State = stored ? (JSON.parse(readFileSync(statePath, "utf8")) as State) : { ...generateLedgerData(options.seed), idempotency: {}, outbox: [] };
  // Written beside the file and renamed over it: a process killed mid-write (a worker's SIGKILL, a
  // Ctrl-C) leaves the previous state whole, never a truncated file the next start cannot read.
  const save = () => {
    if (!statePath) return;
    const next = `${statePath}.${process.pid}.tmp`;
    writeFileSync(next, JSON.stringify(state), { mode: 0o600 });
    renameSync(next, statePath);
  };
  const server = new McpServer({ name: "ledger", version: "1.0.0" });
  const read = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

  server.registerTool(
    "listCustomers",
    {
      description: "List customers (names and emails are personal data), optionally by country.",
      inputSchema: { country: z.string().length(2).optional().describe("ISO country code"), ...page },
      outputSchema: { customers: z.array(customer), nextCursor: z.string().nullable() },
      annotations: { title: "List customers", ...read },
    },
    async ({ country, limit, cursor }) => {
      const { items, nextCursor } = paginate(
        state.customers.filter((c) => !country || c.country === country),
        limit,
        cursor,
      );
      return result({ customers: items, nextCursor });
    },
  );

  server.registerTool(
    "getCustomer",
    {
      description: "Get one customer by id.",
      inputSchema: { customerId: z.string().describe("Customer id, e.g. cus_001") },
      outputSchema: { customer },
      annotations: { title: "Get customer", ...read },
    },
    async ({ customerId }) => {
      const found = state.customers.find((c) => c.id === customerId);
      return found ? result({ customer: found }) : failure(`no customer ${customerId}`);
    },
  );

  server.registerTool(
    "listInvoices",
    {
      description: "List invoices, filtered by customer, status, currency and issue date range (inclusive).",
      inputSchema: {
        customerId: z.string().optional(),
        status: z.enum(INVOICE_STATUSES).optional(),
        currency: currency.optional(),
        issuedFrom: date.optional(),
        issuedTo: date.optional(),
        ...page,
      },
      outputSchema: { invoices: z.array(invoice), nextCursor: z.string().nullable() },
      annotations: { title: "List invoices", ...read },
    },
    async ({ customerId, status, currency: cur, issuedFrom, issuedTo, limit, cursor }) => {
      const matches = state.invoices.filter(
        (i) =>
          (!customerId || i.customerId === customerId) &&
          (!status || i.status === status) &&
          (!cur || i.currency === cur) &&
          (!issuedFrom || i.issuedAt >= issuedFrom) &&
          (!issuedTo || i.issuedAt <= issuedTo),
      );
      const { items, nextCursor } = paginate(matches, limit, cursor);
      return result({ invoices: items, nextCursor });
    },
  );

  server.registerTool(
    "listRefunds",
    {
      description: "List refunds, optionally for one invoice or by status.",
      inputSchema: { invoiceId: z.string().optional(), status: z.enum(REFUND_STATUSES).optional(), ...page },
      outputSchema: { refunds: z.array(refund), nextCursor: z.string().nullable() },
      annotations: { title: "List refunds", ...read },
    },
    async ({ invoiceId, status, limit, cursor }) => {
      const matches = state.refunds.filter((r) => (!invoiceId || r.invoiceId === invoiceId) && (!status || r.status === status));
      const { items, nextCursor } = paginate(matches, limit, cursor);
      return result({ refunds: items, nextCursor });
    },
  );

  server.registerTool(
    "issueRefund",
    {
      description:
        "Refund part or all of a paid invoice. Moves money: destructive. Idempotent by idempotencyKey: repeating a call with the same key returns the first refund.",
      inputSchema: {
        invoiceId: z.string(),
        amountMinor: z.number().int().positive().describe("Amount in minor units; at most what is still refundable"),
        currency: currency.optional().describe("The invoice's currency; refused when it is not"),
        reason: z.string().min(3).max(200),
        idempotencyKey: z.string().min(8).max(100),
      },
      outputSchema: { refund, replayed: z.boolean() },
      annotations: { title: "Issue refund", readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      // What Airlock's plan preview answers instead of refunding, and where the money is.
      _meta: {
        "dev.airlock/preview": {
          refund: {
            id: "$placeholder",
            invoiceId: "$args/invoiceId",
            currency: "$args/currency",
            amountMinor: "$args/amountMinor",
            amount: "$placeholder",
            reason: "$args/reason",
            status: "succeeded",
            createdAt: "$placeholder",
          },
          replayed: false,
        },
        "dev.airlock/money": { amount: "/amountMinor", currency: "/currency", subject: "/invoiceId", unit: "minor" },
      },
    },
    async ({ invoiceId, amountMinor, currency: asked, reason, idempotencyKey }) => {
      const previous = state.idempotency[idempotencyKey];
      if (previous) {
        // As payment APIs do: a key names one request; another refund under it is refused, not answered with the first.
        const first = state.refunds.find((r) => r.id === previous)!;
        const same =
          first.invoiceId === invoiceId && first.amountMinor === amountMinor && first.reason === reason && (asked === undefined || asked === first.currency);
        if (!same) {
          return failure(
            `idempotencyKey ${idempotencyKey} was used for another refund (${first.id}: ${first.amount} ${first.currency} on ${first.invoiceId}); use a new key for a new refund`,
          );
        }
        return result({ refund: first, replayed: true });
      }
      const inv = state.invoices.find((i) => i.id === invoiceId);
      if (!inv) return failure(`no invoice ${invoiceId}`);
      if (asked !== undefined && asked !== inv.currency) return failure(`invoice ${invoiceId} is in ${inv.currency}, not ${asked}`);
      if (inv.status !== "paid") return failure(`invoice ${invoiceId} is ${inv.status}, only paid invoices can be refunded`);
      const already = state.refunds.filter((r) => r.invoiceId === invoiceId && r.status !== "failed").reduce((s, r) => s + r.amountMinor, 0);
      if (already + amountMinor > inv.amountMinor) {
        return failure(`refund exceeds the refundable amount ${formatMinor(inv.amountMinor - already, inv.currency)} ${inv.currency}`);
      }
      const created: Refund = {
        id: `ref_${String(state.refunds.length + 1).padStart(3, "0")}`,
        invoiceId,
        currency: inv.currency,
        amountMinor,
        amount: formatMinor(amountMinor, inv.currency),
        reason,
        status: "succeeded",
        createdAt: new Date().toISOString().slice(0, 10),
      };
      state.refunds.push(created);
      state.idempotency[idempotencyKey] = created.id;
      save();
      return result({ refund: created, replayed: false });
    },
  );

  server.registerTool(
    "sendReminderEmail",
    {
      description: "Email the invoice's customer a payment reminder. Reaches the outside world (open-world); not idempotent.",
      inputSchema: {
        invoiceId: z.string(),
        message: z.string().max(2000).optional(),
        to: z
          .string()
          .max(320)
          .optional()
          .describe("Send to this address instead of the invoice's customer: an email address, or an <EMAIL_n> token from an earlier result"),
      },
      outputSchema: { reminderId: z.string(), to: z.string() },
      annotations: { title: "Send reminder email", readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
      _meta: { "dev.airlock/preview": { reminderId: "$placeholder", to: "$placeholder" } },
    },
    async ({ invoiceId, message, to: address }) => {
      const inv = state.invoices.find((i) => i.id === invoiceId);
      const to = inv && state.customers.find((c) => c.id === inv.customerId);
      if (!inv || !to) return failure(`no invoice ${invoiceId}`);
      if (address !== undefined && !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(address)) return failure(`to is not an email address`);
      const reminder = {
        id: `rem_${state.outbox.length + 1}`,
        to: address ?? to.email,
        invoiceId,
        message: message ?? `Invoice ${invoiceId} is ${inv.status}.`,
        at: new Date().toISOString(),
      };
      state.outbox.push(reminder);
      save();
      return result({ reminderId: reminder.id, to: reminder.to });
    },
  );

  server.registerTool(
    "updateCustomerEmail",
    {
      description: "Change a customer's email address (personal data). Overwrites the previous address.",
      inputSchema: { customerId: z.string(), email: z.email() },
      outputSchema: { customer },
      annotations: { title: "Update customer email", readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    async ({ customerId, email }) => {
      const found = state.customers.find((c) => c.id === customerId);
      if (!found) return failure(`no customer ${customerId}`);
      found.email = email;
      save();
      return result({ customer: found });
    },
  );

  return server;
}

async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { seed: { type: "string" }, state: { type: "string" } }, strict: true });
  const server = createLedgerServer({ seed: values.seed ? Number(values.seed) : undefined, statePath: values.state });
  await server.connect(new StdioServerTransport());
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
