-- Hand-written: the Patterns page (lib/review/patterns.ts listPatterns) groups every fingerprinted
-- run. It read them from the table itself, whose rows carry code, results and logs: a sequential
-- scan of the whole table, a sort of every run and a review lookup per run each time the page
-- opened (2.3 s with 200,000 runs). This index holds what the grouping counts, in the order it
-- groups (fingerprint, then agent), so the counts stream from narrow index entries.
CREATE INDEX "Run_patterns_idx" ON "Run" ("fingerprint", "agentId") INCLUDE ("status", "createdAt")
  WHERE "fingerprint" IS NOT NULL;
