import type { Page } from "@playwright/test";

export class RunPage {
  constructor(readonly page: Page) {}

  async goto(runId: string) {
    await this.page.goto(`/runs/${runId}`);
  }

  get status() {
    return this.page.getByTestId("run-status");
  }

  get quorum() {
    return this.page.getByTestId("quorum");
  }

  get comment() {
    return this.page.getByLabel(/^Comment/);
  }

  get result() {
    return this.page.getByTestId("decision-result");
  }

  get error() {
    return this.page.getByTestId("decision-error");
  }

  get cannotDecide() {
    return this.page.getByTestId("cannot-decide");
  }

  button(name: "Approve" | "Reject" | "Request changes" | "Cancel run") {
    return this.page.getByRole("button", { name, exact: true });
  }

  async decide(verdict: "Approve" | "Reject" | "Request changes", comment?: string) {
    if (comment !== undefined) await this.comment.fill(comment);
    await this.button(verdict).click();
  }
}
