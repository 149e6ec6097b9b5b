/**
 * The demo ledger's state file holds customers' personal data: it is readable by its owner only,
 * whether the ledger creates it or finds it (with a wider mode) from an earlier version. It is
 * replaced whole on every write, so a process killed mid-write, or another process reading it,
 * never finds it torn.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { afterAll, expect, it } from "vitest";
import { generateLedgerData } from "./data";
import { createLedgerServer } from "./server";

const dir = mkdtempSync(join(tmpdir(), "airlock-ledger-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);

async function updateEmail(statePath: string, times = 1): Promise<void> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await createLedgerServer({ statePath }).connect(serverSide);
  const client = new Client({ name: "ledger-test", version: "1" });
  await client.connect(clientSide);
  for (let i = 0; i < times; i++) {
    const result = await client.callTool({ name: "updateCustomerEmail", arguments: { customerId: "cus_003", email: `new.address${i}@example.org` } });
    expect(result.isError).toBeFalsy();
  }
  await client.close();
}

it("creates ledger-state.json with mode 0600", async () => {
  const statePath = join(dir, "new-state.json");
  await updateEmail(statePath);
  expect(mode(statePath)).toBe("600");
});

it("narrows an existing ledger-state.json to 0600 when it starts", async () => {
  const statePath = join(dir, "old-state.json");
  writeFileSync(statePath, JSON.stringify({ ...generateLedgerData(), idempotency: {}, outbox: [] }), { mode: 0o644 });
  expect(mode(statePath)).toBe("644");
  createLedgerServer({ statePath });
  expect(mode(statePath)).toBe("600");
  await updateEmail(statePath);
  expect(mode(statePath)).toBe("600");
});

it("another process reading the state file while the ledger writes it always finds a whole file", async () => {
  const statePath = join(dir, "shared-state.json");
  await updateEmail(statePath);
  // A second process reads and parses the file as fast as it can while this one writes it 200 times.
  const reader = spawn(
    process.execPath,
    [
      "-e",
      `const fs = require("node:fs"); let reads = 0, torn = 0;
       process.stdin.on("end", () => { process.stdout.write(JSON.stringify({ reads, torn })); process.exit(0); }).resume();
       (function read() { try { JSON.parse(fs.readFileSync(${JSON.stringify(statePath)}, "utf8")); } catch { torn++; } if (++reads === 1) process.stdout.write("reading\\n"); setImmediate(read); })();`,
    ],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  let out = "";
  reader.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  const ended = new Promise((resolve) => reader.on("exit", resolve));
  // The writes begin once the reader is reading, so they overlap its reads.
  await new Promise<void>((resolve) => reader.stdout.on("data", () => out.startsWith("reading\n") && resolve()));
  await updateEmail(statePath, 200);
  reader.stdin.end();
  await ended;
  const { reads, torn } = JSON.parse(out.slice("reading\n".length)) as { reads: number; torn: number };
  expect(reads).toBeGreaterThan(20);
  expect(torn).toBe(0);
});

it("a refund's idempotency key names one request: the same refund again is replayed, another under the key is refused", async () => {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await createLedgerServer({ statePath: join(dir, "refunds.json") }).connect(serverSide);
  const client = new Client({ name: "ledger-test", version: "1" });
  await client.connect(clientSide);
  const paid = generateLedgerData().invoices.find((i) => i.status === "paid" && i.amountMinor >= 2_000)!;
  const refund = { invoiceId: paid.id, amountMinor: 999, reason: "damaged", idempotencyKey: "refund-key-1" };
  const first = await client.callTool({ name: "issueRefund", arguments: refund });
  expect(first.structuredContent).toMatchObject({ replayed: false, refund: { amountMinor: 999 } });
  const again = await client.callTool({ name: "issueRefund", arguments: refund });
  expect(again.structuredContent).toMatchObject({ replayed: true, refund: { amountMinor: 999 } });
  const other = await client.callTool({ name: "issueRefund", arguments: { ...refund, amountMinor: 1_999, reason: "damaged, more" } });
  expect(other.isError).toBe(true);
  expect(other.content).toEqual([
    {
      type: "text",
      text: expect.stringMatching(
        /^idempotencyKey refund-key-1 was used for another refund \(ref_\d+: [\d.,]+ [A-Z]{3} on inv_\d+\); use a new key for a new refund$/,
      ),
    },
  ]);
  await client.close();
});
