import { beforeAll, describe, expect, it, vi } from "vitest";
import { findPii, isPiiDetectorLoaded, loadPiiDetector, type PiiKind } from "./pii";

beforeAll(async () => {
  await loadPiiDetector();
});

function found(text: string): [PiiKind, string][] {
  return findPii(text).map((m) => [m.kind, m.value]);
}

/** Builds an IBAN with a correct mod-97 check from a country and its BBAN. */
function iban(country: string, bban: string): string {
  const numeric = (bban + country + "00").replace(/[A-Z]/g, (c) => String(c.charCodeAt(0) - 55));
  let remainder = 0;
  for (const ch of numeric) remainder = (remainder * 10 + Number(ch)) % 97;
  return country + String(98 - remainder).padStart(2, "0") + bban;
}

describe("loading", () => {
  it("throws a clear error until loadPiiDetector() has finished, then works", async () => {
    vi.resetModules();
    const fresh = await import("./pii");
    expect(fresh.isPiiDetectorLoaded()).toBe(false);
    expect(() => fresh.findPii("alice@example.com")).toThrow(/loadPiiDetector/);
    const pending = fresh.loadPiiDetector();
    expect(fresh.loadPiiDetector()).toBe(pending); // one load, however many callers
    await pending;
    expect(fresh.findPii("alice@example.com")).toEqual([{ kind: "EMAIL", start: 0, end: 17, value: "alice@example.com" }]);
    expect(isPiiDetectorLoaded()).toBe(true);
  });
});

describe("emails", () => {
  it.each([
    ["alice@example.com", "alice@example.com"],
    ["Bob.Smith+tag@sub.example.co.uk", "Bob.Smith+tag@sub.example.co.uk"],
    ["write to x_y@corp.io today", "x_y@corp.io"],
    ["Ünïcode: zoë.o'neil@example.org!", "zoë.o'neil@example.org"],
    ["用户@例子.广告", "用户@例子.广告"],
    ["mailto:ops@acme.test?subject=hi", "ops@acme.test"],
    ["Alice <alice@example.com>", "alice@example.com"],
    ["'bob@x.io'", "bob@x.io"],
    ["contact:alice@example.com.", "alice@example.com"],
    ["(alice@example.com)", "alice@example.com"],
    ["email=alice@example.com&x=1", "alice@example.com"],
    ["a@b.xn--p1ai", "a@b.xn--p1ai"],
    ["🙂alice@example.com🙂", "alice@example.com"],
  ])("finds the address in %j", (text, value) => {
    expect(found(text)).toEqual([["EMAIL", value]]);
  });

  it("finds every address in a list", () => {
    expect(found("alice@example.com,bob@example.com; carol@example.org")).toEqual([
      ["EMAIL", "alice@example.com"],
      ["EMAIL", "bob@example.com"],
      ["EMAIL", "carol@example.org"],
    ]);
  });
});

describe("phone numbers", () => {
  it.each([
    "+1 415 555 2671",
    "+1-212-555-0199",
    "+1 (415) 555-2671",
    "(415) 555-2671",
    "415-555-2671",
    "415.555.2671",
    "415 555 2671",
    "1 415 555 2671",
    "+44 20 7946 0958",
    "+44 7700 900123",
    "+49 30 901820",
    "+33 1 42 68 53 00",
    "+81 3-1234-5678",
    "+61 2 9374 4000",
    "+4915112345678",
    "0044 20 7946 0958",
    "030 901820",
    "07700 900123",
    "06 12 34 56 78",
  ])("finds %j alone and inside text", (phone) => {
    expect(found(phone)).toEqual([["PHONE", phone]]);
    expect(found(`Call ${phone}, ask for Jo.`)).toEqual([["PHONE", phone]]);
    expect(found(`{"phone":"${phone}"}`)).toEqual([["PHONE", phone]]);
  });

  it("finds numbers glued to punctuation and schemes", () => {
    expect(found("phone=+1 415 555 2671;")).toEqual([["PHONE", "+1 415 555 2671"]]);
    expect(found("tel:+14155552671")).toEqual([["PHONE", "+14155552671"]]);
    expect(found("415-555-2671 / 415-555-2672")).toEqual([
      ["PHONE", "415-555-2671"],
      ["PHONE", "415-555-2672"],
    ]);
    expect(found("mobile\u00a0+44\u00a07700\u00a0900123")).toEqual([["PHONE", "+44\u00a07700\u00a0900123"]]);
    // National numbers in a row: the engine may cover them as one match, but none is left out.
    const row = "030 901820 030 901821";
    expect(findPii(row).map((m) => [m.start, m.end])).toEqual([[0, row.length]]);
    expect(found("+4915112345678")).toEqual([["PHONE", "+4915112345678"]]); // also passes Luhn
  });
});

describe("IBANs", () => {
  it.each([
    "DE89 3704 0044 0532 0130 00",
    "DE89370400440532013000",
    "GB82 WEST 1234 5698 7654 32",
    "GB82WEST12345698765432",
    "FR14 2004 1010 0505 0001 3M02 606",
    "NL91ABNA0417164300",
    "CH9300762011623852957",
    "BE68539007547034",
    "ES9121000418450200051332",
    "IT60X0542811101000000123456",
    "NO9386011117947",
    "PL61109010140000071219812874",
    "de89370400440532013000",
    "DE89-3704-0044-0532-0130-00",
    "GB82-WEST-1234-5698-7654-32",
    iban("AT", "1904300234573201"),
  ])("finds %j alone and inside text", (value) => {
    expect(found(value)).toEqual([["IBAN", value]]);
    expect(found(`Pay to ${value}.`)).toEqual([["IBAN", value]]);
  });

  it("stops at the country's length, so a currency or a word after it is not swallowed", () => {
    expect(found("IBAN DE89 3704 0044 0532 0130 00 EUR")).toEqual([["IBAN", "DE89 3704 0044 0532 0130 00"]]);
    expect(found("iban:CH9300762011623852957.")).toEqual([["IBAN", "CH9300762011623852957"]]);
    expect(found("IBAN DE89-3704-0044-0532-0130-00-EUR")).toEqual([["IBAN", "DE89-3704-0044-0532-0130-00"]]);
    expect(found("DE89370400440532013000 and NL91ABNA0417164300")).toEqual([
      ["IBAN", "DE89370400440532013000"],
      ["IBAN", "NL91ABNA0417164300"],
    ]);
  });

  it.each([
    "DE00 3704 0044 0532 0130 00", // wrong check digits
    "DE89370400440532013001", // one digit changed
    "DE8937040044053201300", // one short
    "DE893704004405320130000", // one long
    "XX89370400440532013000", // no such country
    "GB82WEST12345698765432X", // glued to more
  ])("ignores %j", (value) => {
    expect(found(value).filter(([k]) => k === "IBAN")).toEqual([]);
  });
});

describe("card numbers", () => {
  it.each([
    "4111111111111111",
    "4111 1111 1111 1111",
    "4111-1111-1111-1111",
    "4111.1111.1111.1111",
    "4242424242424242",
    "5555 5555 5555 4444",
    "5555-5555-5555-4444",
    "2223003122003222",
    "378282246310005",
    "3782 822463 10005",
    "3782.822463.10005",
    "6011111111111117",
    "3530111333300000",
    "30569309025904",
    "6200000000000005",
    "4222222222222",
  ])("finds %j alone and inside text", (card) => {
    expect(found(card)).toEqual([["CARD", card]]);
    expect(found(`card: ${card}, exp 12/29`)).toEqual([["CARD", card]]);
    expect(found(`зоя ${card} é`)).toEqual([["CARD", card]]);
  });

  it.each([
    "4111111111111112", // fails Luhn
    "4111 1111 1111 1112",
    "4111.1111.1111.1112",
    "4111.1111-1111 1111", // separators mixed
    "1234567812345678", // no issuer starts with 1
    "9999999999999995", // Luhn-valid, no issuer
    "0.4532015112830366", // a probability, not a card
    "41111111111111111111", // too long
  ])("ignores %j", (value) => {
    expect(found(value).filter(([k]) => k === "CARD")).toEqual([]);
  });
});

describe("benign look-alikes", () => {
  it.each([
    "inv_0001",
    "INV-2026-000123",
    "invoice 000123456789",
    "ORD-99887766",
    "order 20261130000123",
    "2026-11-30",
    "2026-11-30T12:34:56.789Z",
    "2026-11-30 12:30:00",
    "Fri Dec 04 2026 21:23:02 GMT+0000 (Coordinated Universal Time)",
    "Dec 04 2026 21:23",
    "30/11/2026",
    "12:30:45",
    "1733097600000",
    "1733097600",
    "amountCents: 123456",
    "total 12345678 cents",
    "amount 99999999",
    "1,234,567.89",
    "1234567.89",
    "550e8400-e29b-41d4-a716-446655440000",
    "00000000-0008-4080-a000-000000000000",
    "ref 12345678-1234-4123-8123-123456789012",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "v1.2.3",
    "version 10.24.1",
    "build 20261130.4",
    "10.0.0.1",
    "192.168.100.200",
    "ISBN 978-3-16-148410-0",
    "+12345",
    "icon@2x.png",
    "npm i @scope/pkg@1.2.3",
    "user@localhost",
    "foo@bar.123",
    "cus_4111111111111111x",
    "Customer 42 in room 415",
  ])("finds nothing in %j", (text) => {
    expect(findPii(text)).toEqual([]);
  });

  it("does not detect names: they are marked by configuration", () => {
    expect(findPii("Dr. Jane Smith met José García at 10:00")).toEqual([]);
  });
});

describe("matches", () => {
  it("are in order, non-overlapping, and each value is the text it covers", () => {
    const text = "Jo <jo@example.com>, +44 20 7946 0958, DE89 3704 0044 0532 0130 00, card 4111 1111 1111 1111, (415) 555-2671.";
    const matches = findPii(text);
    expect(matches.map((m) => m.kind)).toEqual(["EMAIL", "PHONE", "IBAN", "CARD", "PHONE"]);
    for (const m of matches) expect(text.slice(m.start, m.end)).toBe(m.value);
    for (let i = 1; i < matches.length; i++) expect(matches[i]!.start).toBeGreaterThanOrEqual(matches[i - 1]!.end);
  });

  it("reports a digit run once: an IBAN or a card is not also a phone number", () => {
    expect(found("4111111111111111")).toEqual([["CARD", "4111111111111111"]]);
    expect(found("NO9386011117947")).toEqual([["IBAN", "NO9386011117947"]]);
  });

  it("works on every string of a JSON result", () => {
    const rows = Array.from({ length: 50 }, (_, i) => ({
      id: `cus_${i}`,
      email: `user${i}@example.com`,
      phone: `+1 415 555 ${String(1000 + i)}`,
      iban: iban("DE", String(370400440532013000 + i).padStart(18, "0")),
      note: `Invoice inv_${i} for ${1000 + i} cents due 2026-11-30`,
    }));
    const counts: Record<string, number> = {};
    for (const row of rows) for (const v of Object.values(row)) for (const m of findPii(v)) counts[m.kind] = (counts[m.kind] ?? 0) + 1;
    expect(counts).toEqual({ EMAIL: 50, PHONE: 50, IBAN: 50 });
  });
});

describe("bounded work", () => {
  const MB = 1_000_000;
  it.each<[string, string]>([
    ["digits", "1".repeat(MB)],
    ["spaced digits", "1 ".repeat(MB / 2)],
    ["plus signs", "+1 ".repeat(MB / 3)],
    ["national numbers (engine)", "030 901820 ".repeat(MB / 11)],
    ["card groups", "4111 ".repeat(MB / 5)],
    ["iban heads", "DE89".repeat(MB / 4)],
    ["spaced iban heads", "DE89 ".repeat(MB / 5)],
    ["at signs", "a@".repeat(MB / 2)],
    ["dotted local part without @", "a.".repeat(MB / 2)],
    ["dotted local part then @", "a.".repeat(MB / 2) + "@x"],
    ["dotted domain", "x@" + "a.".repeat(MB / 2)],
    ["long labels", "x@" + "a".repeat(MB) + ".com"],
    ["hyphens", "x@" + "a-".repeat(MB / 2)],
    ["unicode", "ü".repeat(MB) + "@"],
    ["parentheses", "(".repeat(MB / 2) + "1".repeat(MB / 2)],
  ])("scans 1 MB of %s quickly", (_name, text) => {
    const t0 = performance.now();
    findPii(text);
    expect(performance.now() - t0).toBeLessThan(3_000);
  });
});
