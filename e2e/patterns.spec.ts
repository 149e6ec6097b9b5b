/**
 * Patterns in the console: three runs of one script with other literals, submitted through the
 * MCP endpoint, are one pattern on the Patterns page, which names the literal that varies.
 */
import { fingerprintScript } from "../lib/script-fingerprint";
import { expect, test } from "./fixtures";

const script = (limit: number) => `const page = await tools.ledger.listInvoices({ currency: "EUR", limit: ${limit} });
return { patternsSpec: page.invoices.length };`;

test("three runs of one script with other literals form one pattern, with the varying literal named", async ({ mcpClient: client, page, loginAs }) => {
  for (const limit of [2, 3, 4]) {
    const answer = await client.callTool({ name: "submit_run", arguments: { code: script(limit), purpose: `EUR invoices, ${limit}` } });
    expect(JSON.parse((answer.content as { text: string }[])[0]!.text)).toMatchObject({ status: "succeeded" });
  }
  const { fingerprint } = fingerprintScript(script(2), "typescript", ["ledger.listInvoices"]);

  await loginAs("reviewer");
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Patterns" }).click();
  await expect(page).toHaveURL(/\/patterns$/);
  const row = page.getByTestId(`pattern-${fingerprint.slice(0, 12)}`);
  await expect(row.getByTestId("count")).toHaveText("3");
  await expect(row.getByTestId("holes")).toContainText('#2 number, 3 values: "2", "3", "4"');
  await expect(row).toContainText("100%");
});
