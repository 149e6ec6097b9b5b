/**
 * The content of one seeded benchmark run, shaped and sized like the demo's runs: the scripts the
 * README and the e2e tests submit, calling the demo ledger (lib/demo/ledger) with its real data,
 * so each tool call's arguments and result are what the ledger answers (an overdue listing is
 * ~5 KB, the paid invoices ~20 KB, succeeded refunds ~6 KB, a customer ~150 B).
 *
 * Four workloads, in rotation: overdue invoices (one read), net revenue per currency (two reads),
 * customers of a country (three reads), and a refund (a read and a write, escalated). Each carries
 * words from the search vocabulary the benchmark queries (`words`), plus the rare word when given.
 *
 * Only for bench/audit-seed.ts; never used by the app.
 */
import { generateLedgerData, type LedgerData } from "@/lib/demo/ledger/data";

export type SeedCall = { server: string; tool: string; args: Record<string, unknown>; result: Record<string, unknown> };

export type SeedWorkload = {
  kind: "overdue" | "revenue" | "customers" | "refund";
  code: string;
  purpose: string;
  prompt: string;
  calls: SeedCall[];
  result: Record<string, unknown>;
  logs: { level: "log" | "warn"; text: string }[];
  dataClass: "financial" | "pii";
  writes: boolean;
};

let ledger: LedgerData | null = null;
function data(): LedgerData {
  ledger ??= generateLedgerData();
  return ledger;
}

const page = <T>(key: string, items: T[]) => ({ [key]: items, nextCursor: null });

export function seedWorkload(n: number, words: string[], rare: string): SeedWorkload {
  const d = data();
  const comment = `// ${words.join(" ")}${rare}`;
  switch (n % 4) {
    case 0: {
      const overdue = d.invoices.filter((i) => i.status === "overdue");
      return {
        kind: "overdue",
        code: [
          comment,
          `const { invoices } = await tools.ledger.listInvoices({ status: "overdue", limit: 500 });`,
          `const byCurrency = {};`,
          `for (const invoice of invoices) byCurrency[invoice.currency] = (byCurrency[invoice.currency] ?? 0) + invoice.amountMinor;`,
          `console.log(\`\${invoices.length} overdue invoices\`);`,
          `return { overdue: invoices.length, byCurrency }; // run ${n}`,
        ].join("\n"),
        purpose: `Summarise overdue ${words[1]} invoices by currency for ${words[2]}${rare}`,
        prompt: `How much is overdue right now, per currency? Focus on ${words[0]} accounts.${rare}`,
        calls: [{ server: "ledger", tool: "listInvoices", args: { status: "overdue", limit: 500 }, result: page("invoices", overdue) }],
        result: { overdue: overdue.length, byCurrency: totals(overdue) },
        logs: [{ level: "log", text: `${overdue.length} overdue invoices` }],
        dataClass: "financial",
        writes: false,
      };
    }
    case 1: {
      const paid = d.invoices.filter((i) => i.status === "paid");
      const refunds = d.refunds.filter((r) => r.status === "succeeded");
      return {
        kind: "revenue",
        code: [
          comment,
          `// Net paid revenue minus succeeded refunds, per currency, paging 500 rows at a time.`,
          `const net = {};`,
          `let cursor = undefined;`,
          `do {`,
          `  const page = await tools.ledger.listInvoices({ status: "paid", limit: 500, cursor });`,
          `  for (const i of page.invoices) net[i.currency] = (net[i.currency] ?? 0) + i.amountMinor;`,
          `  cursor = page.nextCursor ?? undefined;`,
          `} while (cursor);`,
          `const { refunds } = await tools.ledger.listRefunds({ status: "succeeded", limit: 500 });`,
          `for (const r of refunds) net[r.currency] = (net[r.currency] ?? 0) - r.amountMinor;`,
          `console.log(\`\${Object.keys(net).length} currencies\`);`,
          `return net; // run ${n}`,
        ].join("\n"),
        purpose: `Net paid revenue minus refunds per currency, ${words[1]} review by ${words[2]}${rare}`,
        prompt: `What is our net revenue per currency after refunds? Page through all invoices.${rare}`,
        calls: [
          { server: "ledger", tool: "listInvoices", args: { status: "paid", limit: 500 }, result: page("invoices", paid) },
          { server: "ledger", tool: "listRefunds", args: { status: "succeeded", limit: 500 }, result: page("refunds", refunds) },
        ],
        result: totals(paid),
        logs: [{ level: "log", text: `${Object.keys(totals(paid)).length} currencies` }],
        dataClass: "financial",
        writes: false,
      };
    }
    case 2: {
      const country = ["IT", "US", "FR", "DE", "CH", "CA", "JP", "GB"][n % 8]!;
      const customers = d.customers.filter((c) => c.country === country);
      const first = customers[0] ?? d.customers[0]!;
      return {
        kind: "customers",
        code: [
          comment,
          `const { customers } = await tools.ledger.listCustomers({ country: "${country}", limit: 500 });`,
          `const details = [];`,
          `for (const c of customers.slice(0, 2)) details.push((await tools.ledger.getCustomer({ customerId: c.id })).customer);`,
          `return { count: customers.length, sample: details.map((c) => c.name) }; // run ${n}`,
        ].join("\n"),
        purpose: `List ${words[0]} customers in ${country} for the ${words[1]} ${words[2]} call list${rare}`,
        prompt: `Which customers do we have in ${country}? Give me a couple of names.${rare}`,
        calls: [
          { server: "ledger", tool: "listCustomers", args: { country, limit: 500 }, result: page("customers", customers) },
          { server: "ledger", tool: "getCustomer", args: { customerId: first.id }, result: { customer: first } },
          { server: "ledger", tool: "getCustomer", args: { customerId: first.id }, result: { customer: first } },
        ],
        result: { count: customers.length, sample: [first.name, first.name] },
        logs: [],
        dataClass: "pii",
        writes: false,
      };
    }
    default: {
      const invoice = d.invoices.filter((i) => i.status === "paid")[n % 100]!;
      const refund = {
        id: `ref_${n}`,
        invoiceId: invoice.id,
        currency: invoice.currency,
        amountMinor: 1,
        amount: "0.01",
        reason: "goodwill",
        status: "succeeded",
        createdAt: invoice.issuedAt,
      };
      return {
        kind: "refund",
        code: [
          comment,
          `const { invoices } = await tools.ledger.listInvoices({ customerId: "${invoice.customerId}", status: "paid", limit: 500 });`,
          `const target = invoices.find((i) => i.id === "${invoice.id}");`,
          `if (!target) throw new Error("invoice not found");`,
          `const { refund } = await tools.ledger.issueRefund({ invoiceId: target.id, amountMinor: 1, currency: target.currency, reason: "goodwill", idempotencyKey: "refund-${n}" });`,
          `return { refund: refund.id, amount: refund.amount }; // run ${n}`,
        ].join("\n"),
        purpose: `Refund 0.01 on invoice ${invoice.id} as a ${words[0]} goodwill gesture (${words[1]})${rare}`,
        prompt: `Please refund one cent on ${invoice.id}, the customer complained about ${words[2]}.${rare}`,
        calls: [
          {
            server: "ledger",
            tool: "listInvoices",
            args: { customerId: invoice.customerId, status: "paid", limit: 500 },
            result: page(
              "invoices",
              d.invoices.filter((i) => i.customerId === invoice.customerId && i.status === "paid"),
            ),
          },
          {
            server: "ledger",
            tool: "issueRefund",
            args: { invoiceId: invoice.id, amountMinor: 1, currency: invoice.currency, reason: "goodwill", idempotencyKey: `refund-${n}` },
            result: { refund, replayed: false },
          },
        ],
        result: { refund: refund.id, amount: refund.amount },
        logs: [],
        dataClass: "financial",
        writes: true,
      };
    }
  }
}

function totals(items: { currency: string; amountMinor: number }[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const item of items) out[item.currency] = (out[item.currency] ?? 0) + item.amountMinor;
  return out;
}
