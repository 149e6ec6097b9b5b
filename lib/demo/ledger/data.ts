/**
 * Deterministic demo data for the `ledger` MCP server: customers (names and emails are PII),
 * invoices and refunds in several currencies. The same seed always yields the same data, so tests
 * can compute expected figures independently of the server. Amounts are integers in minor units
 * (cents; yen have none) to keep arithmetic exact.
 */

export const CURRENCIES = { EUR: 2, USD: 2, GBP: 2, CHF: 2, JPY: 0 } as const;
export type Currency = keyof typeof CURRENCIES;
export const INVOICE_STATUSES = ["draft", "open", "paid", "overdue", "void"] as const;
export const REFUND_STATUSES = ["succeeded", "pending", "failed"] as const;

export type Customer = { id: string; name: string; email: string; country: string; currency: Currency; createdAt: string };
export type Invoice = {
  id: string;
  customerId: string;
  currency: Currency;
  amountMinor: number;
  amount: string;
  status: (typeof INVOICE_STATUSES)[number];
  issuedAt: string;
  dueAt: string;
};
export type Refund = {
  id: string;
  invoiceId: string;
  currency: Currency;
  amountMinor: number;
  amount: string;
  reason: string;
  status: (typeof REFUND_STATUSES)[number];
  createdAt: string;
};
export type LedgerData = { customers: Customer[]; invoices: Invoice[]; refunds: Refund[] };

const FIRST = [
  "Ada",
  "Bruno",
  "Chiara",
  "Dmitri",
  "Elif",
  "Farah",
  "Goran",
  "Hana",
  "Ines",
  "Jonas",
  "Kenji",
  "Lena",
  "Mateo",
  "Nora",
  "Omar",
  "Priya",
  "Quentin",
  "Rosa",
  "Sven",
  "Tomoko",
];
const LAST = [
  "Adeyemi",
  "Becker",
  "Costa",
  "Dubois",
  "Eriksen",
  "Fischer",
  "García",
  "Hoffmann",
  "Ivanova",
  "Jensen",
  "Kowalski",
  "Lindqvist",
  "Moreau",
  "Nakamura",
  "O'Brien",
  "Petrov",
  "Rossi",
  "Schmidt",
  "Tanaka",
  "Weber",
];
const COUNTRIES: [string, Currency][] = [
  ["DE", "EUR"],
  ["FR", "EUR"],
  ["US", "USD"],
  ["GB", "GBP"],
  ["CH", "CHF"],
  ["JP", "JPY"],
  ["IT", "EUR"],
  ["CA", "USD"],
];
const REASONS = ["duplicate charge", "service outage credit", "goodwill", "cancelled order", "pricing error"];

function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function formatMinor(amountMinor: number, currency: Currency): string {
  const digits = CURRENCIES[currency];
  if (digits === 0) return String(amountMinor);
  const sign = amountMinor < 0 ? "-" : "";
  const abs = Math.abs(amountMinor);
  return `${sign}${Math.floor(abs / 10 ** digits)}.${String(abs % 10 ** digits).padStart(digits, "0")}`;
}

function day(base: number, offsetDays: number): string {
  return new Date(base + offsetDays * 86_400_000).toISOString().slice(0, 10);
}

const pad = (n: number, width: number) => String(n).padStart(width, "0");

export function generateLedgerData(seed = 42): LedgerData {
  const rand = prng(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rand() * list.length)]!;
  const start = Date.UTC(2026, 0, 1);
  const customers: Customer[] = [];
  for (let i = 1; i <= 40; i++) {
    const first = pick(FIRST);
    const last = pick(LAST);
    const [country, currency] = pick(COUNTRIES);
    const local = `${first}.${last}`
      .toLowerCase()
      .normalize("NFD")
      .replace(/[^a-z.]/g, "");
    customers.push({
      id: `cus_${pad(i, 3)}`,
      name: `${first} ${last}`,
      email: `${local}${i}@example.com`,
      country,
      currency,
      createdAt: day(start, -Math.floor(rand() * 700)),
    });
  }
  const invoices: Invoice[] = [];
  for (let i = 1; i <= 240; i++) {
    const customer = pick(customers);
    const currency = rand() < 0.8 ? customer.currency : pick(Object.keys(CURRENCIES) as Currency[]);
    const amountMinor = currency === "JPY" ? 1000 * (5 + Math.floor(rand() * 400)) : 100 * (20 + Math.floor(rand() * 4000)) + Math.floor(rand() * 100);
    const issued = Math.floor(rand() * 300);
    const roll = rand();
    const status = roll < 0.55 ? "paid" : roll < 0.75 ? "open" : roll < 0.9 ? "overdue" : roll < 0.96 ? "void" : "draft";
    invoices.push({
      id: `inv_${pad(i, 4)}`,
      customerId: customer.id,
      currency,
      amountMinor,
      amount: formatMinor(amountMinor, currency),
      status,
      issuedAt: day(start, issued),
      dueAt: day(start, issued + 30),
    });
  }
  const refunds: Refund[] = [];
  // One support agent pasted a customer's API key into a refund reason, as happens: the demo's way
  // to show that a secret an upstream returns is redacted before a script or a model sees it.
  const LEAKED_REFUND = 7;
  const LEAKED_REASON = "duplicate charge; customer sent their Stripe key sk_test_4eC39HqLyjWDarjtT1zdp7dc to support";
  const paid = invoices.filter((inv) => inv.status === "paid");
  const refunded = new Set<string>();
  for (let i = 1; i <= 45; i++) {
    let invoice = pick(paid);
    while (refunded.has(invoice.id)) invoice = pick(paid);
    refunded.add(invoice.id);
    const unit = invoice.currency === "JPY" ? 1000 : 100;
    const amountMinor = Math.max(unit, Math.floor((invoice.amountMinor * (0.1 + rand() * 0.4)) / unit) * unit);
    const roll = rand();
    const reason = pick(REASONS);
    refunds.push({
      id: `ref_${pad(i, 3)}`,
      invoiceId: invoice.id,
      currency: invoice.currency,
      amountMinor,
      amount: formatMinor(amountMinor, invoice.currency),
      reason: i === LEAKED_REFUND ? LEAKED_REASON : reason,
      status: roll < 0.8 ? "succeeded" : roll < 0.92 ? "pending" : "failed",
      createdAt: day(Date.parse(`${invoice.issuedAt}T00:00:00Z`), 1 + Math.floor(rand() * 20)),
    });
  }
  return { customers, invoices, refunds };
}
