-- The budgets read an agent's runs of the last hour (createdAt), its runs not finished (status) and
-- its runs finished in the last day (finishedAt). The first had an index; the other two did not, so
-- the statement read every run the agent ever had: a whole-table scan on each submission, 38 ms
-- with 100,000 old runs and 180 ms with 400,000. With these, each part is an index scan of its own
-- rows (lib/intake/submit.ts, budgetFigures, whose status list must stay this list).
CREATE INDEX "Run_agentId_open_idx" ON "Run" ("agentId")
  WHERE status IN ('auto_approved', 'approved', 'queued', 'running', 'previewing', 'pending_review', 'pending_release');
CREATE INDEX "Run_agentId_finishedAt_idx" ON "Run" ("agentId", "finishedAt");
