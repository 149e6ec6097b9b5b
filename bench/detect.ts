/**
 * Benchmark of the post-execution detection layer: prints one JSON object.
 *
 * Over one 1,000-row tool result (`{ id, name, email, phone, iban, note }`, phone numbers in
 * international, North American and national formats, valid IBANs, notes with dates, amounts,
 * ids and now and then a card number or a credential), in milliseconds per whole result:
 *
 * - baseline: `JSON.stringify` + `JSON.parse` of the result, which the gate pays anyway;
 * - secrets: `redactSecretsInJson` (every key and string value);
 * - pii: `findPii` over every string of the result (keys and values);
 * - both: secrets then pii, as the gate would run them.
 *
 * Pure CPU, no I/O. The data is generated from a fixed seed, so runs are comparable.
 */
import { cpus } from "node:os";
import { findPii, loadPiiDetector, type PiiKind } from "@/lib/untrusted/pii";
import type { JsonValue } from "@/lib/untrusted/safe-json";
import { redactSecretsInJson, type SecretKind } from "@/lib/untrusted/secrets";

const ROWS = 1_000;
const WARMUP = 20;
const ITERATIONS = 200;

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

function summarize(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const round = (n: number) => Number(n.toFixed(3));
  return { p50: round(quantile(sorted, 0.5)), p95: round(quantile(sorted, 0.95)), p99: round(quantile(sorted, 0.99)), max: round(sorted[sorted.length - 1]!) };
}

// Deterministic data: a small LCG, so every run measures the same result.
let seed = 42;
function rand(n: number): number {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return Math.floor(seed / 65536) % n; // the high bits: the low ones of an LCG repeat quickly
}
const pick = <T>(items: readonly T[]): T => items[rand(items.length)]!;
const digits = (n: number) => Array.from({ length: n }, () => String(rand(10))).join("");
const hex = (n: number) => Array.from({ length: n }, () => "0123456789abcdef"[rand(16)]).join("");
const uuid = () => `${hex(8)}-${hex(4)}-4${hex(3)}-a${hex(3)}-${hex(12)}`;

function iban(country: string, bban: string): string {
  const numeric = (bban + country + "00").replace(/[A-Z]/g, (c) => String(c.charCodeAt(0) - 55));
  let remainder = 0;
  for (const ch of numeric) remainder = (remainder * 10 + Number(ch)) % 97;
  const compact = country + String(98 - remainder).padStart(2, "0") + bban;
  return compact.replace(/(.{4})/g, "$1 ").trim();
}

function luhnCard(prefix: string, length: number): string {
  const body = prefix + digits(length - prefix.length - 1);
  for (let check = 0; check < 10; check++) {
    const candidate = body + check;
    let sum = 0;
    for (let i = 0; i < candidate.length; i++) {
      let d = Number(candidate[candidate.length - 1 - i]);
      if (i % 2 === 1) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
      sum += d;
    }
    if (sum % 10 === 0) return candidate;
  }
  return body;
}

const FIRST = ["Ana", "Bo", "Chen", "Dara", "Elif", "Femi", "Greta", "Hiro", "Ines", "José", "Kofi", "Léa", "Mia", "Nour", "Olu", "Priya"];
const LAST = ["Silva", "Ng", "Okafor", "Müller", "Rossi", "Kowalski", "Haddad", "Tanaka", "Dubois", "Smith", "Ivanova", "García"];
const DOMAINS = ["example.com", "mail.example.org", "acme.test", "corp.example.co.uk"];

function phone(): string {
  switch (rand(6)) {
    case 0:
      return `+1 ${200 + rand(700)} 555 ${digits(4)}`;
    case 1:
      return `(${200 + rand(700)}) 555-${digits(4)}`;
    case 2:
      return `+44 20 7946 ${digits(4)}`;
    case 3:
      return `+49 30 ${digits(6)}`;
    case 4:
      return `030 ${digits(6)}`; // national: decided by the engine
    default:
      return `07700 ${digits(6)}`; // national: decided by the engine
  }
}

function note(i: number): string {
  const base = `Invoice inv_${String(i).padStart(5, "0")} for ${1000 + rand(900000)} cents due 2026-${String(1 + rand(12)).padStart(2, "0")}-${String(1 + rand(28)).padStart(2, "0")}; order ORD-${digits(8)}, ref ${uuid()}`;
  if (i % 50 === 0)
    return `${base}. Paid with card ${luhnCard("4", 16)
      .replace(/(.{4})/g, "$1 ")
      .trim()}.`;
  if (i % 97 === 0) return `${base}. Debug: Authorization: Bearer ghp_${"a1B2c3D4e5".repeat(4).slice(0, 36)}`;
  if (i % 3 === 0) return `${base}. Customer asked to call back after 5pm; see ticket #${rand(100000)}.`;
  return base;
}

function buildResult(): JsonValue {
  const rows: JsonValue[] = [];
  for (let i = 0; i < ROWS; i++) {
    const first = pick(FIRST);
    const last = pick(LAST);
    const ibanValue = pick([
      () => iban("DE", digits(18)),
      () => iban("GB", "WEST" + digits(14)),
      () => iban("FR", digits(23)),
      () => iban("NL", "ABNA" + digits(10)),
    ])();
    rows.push({
      id: `cus_${String(i).padStart(6, "0")}`,
      name: `${first} ${last}`,
      email: `${first.toLowerCase()}.${last.toLowerCase()}${i}@${pick(DOMAINS)}`,
      phone: phone(),
      iban: ibanValue,
      note: note(i),
    });
  }
  return { customers: rows, count: ROWS, nextPageToken: null };
}

function eachString(value: JsonValue, visit: (s: string) => void): void {
  if (typeof value === "string") visit(value);
  else if (Array.isArray(value)) for (const item of value) eachString(item, visit);
  else if (value !== null && typeof value === "object")
    for (const [key, child] of Object.entries(value)) {
      visit(key);
      eachString(child, visit);
    }
}

function time(run: () => void): number[] {
  for (let i = 0; i < WARMUP; i++) run();
  const samples: number[] = [];
  for (let i = 0; i < ITERATIONS; i++) {
    const t0 = performance.now();
    run();
    samples.push(performance.now() - t0);
  }
  return samples;
}

async function main() {
  const t0 = performance.now();
  await loadPiiDetector();
  const loadMs = performance.now() - t0;

  const result = buildResult();
  const json = JSON.stringify(result);
  let strings = 0;
  eachString(result, () => strings++);

  const piiCounts: Partial<Record<PiiKind, number>> = {};
  eachString(result, (s) => {
    for (const m of findPii(s)) piiCounts[m.kind] = (piiCounts[m.kind] ?? 0) + 1;
  });
  const secretCounts: Partial<Record<SecretKind, number>> = {};
  for (const r of redactSecretsInJson(result).redactions) secretCounts[r.kind] = (secretCounts[r.kind] ?? 0) + 1;

  const baseline = time(() => JSON.parse(JSON.stringify(result)));
  const secrets = time(() => redactSecretsInJson(result));
  const pii = time(() => eachString(result, (s) => void findPii(s)));
  const both = time(() => eachString(redactSecretsInJson(result).value, (s) => void findPii(s)));

  console.log(
    JSON.stringify(
      {
        benchmark: "detect",
        node: process.version,
        cpus: cpus().length,
        rows: ROWS,
        strings,
        jsonBytes: Buffer.byteLength(json),
        iterations: ITERATIONS,
        unit: "ms",
        loadPiiDetectorMs: Number(loadMs.toFixed(1)),
        found: { pii: piiCounts, secrets: secretCounts },
        baseline: summarize(baseline),
        secrets: summarize(secrets),
        pii: summarize(pii),
        both: summarize(both),
      },
      null,
      2,
    ),
  );
}

await main();
