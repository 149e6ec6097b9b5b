/**
 * The demo ledger's state file holds customers' personal data: it is readable by its owner only,
 * whether the ledger creates it or finds it (with a wider mode) from an earlier version.
 */
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

async function updateEmail(statePath: string): Promise<void> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await createLedgerServer({ statePath }).connect(serverSide);
  const client = new Client({ name: "ledger-test", version: "1" });
  await client.connect(clientSide);
  const result = await client.callTool({ name: "updateCustomerEmail", arguments: { customerId: "cus_003", email: "new.address@example.org" } });
  expect(result.isError).toBeFalsy();
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
