import type { Page } from "@playwright/test";

export class QueuePage {
  constructor(readonly page: Page) {}

  async goto(query = "") {
    await this.page.goto(`/queue${query}`);
  }

  row(runId: string) {
    return this.page.getByTestId(`queue-row-${runId}`);
  }

  get badge() {
    return this.page.getByRole("navigation", { name: "Console" }).getByTestId("queue-badge");
  }

  async open(runId: string) {
    await this.row(runId).getByRole("link").click();
    await this.page.waitForURL(`**/runs/${runId}`);
  }
}
