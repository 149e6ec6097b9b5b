-- Patterns: every run's structural fingerprint (lib/script-fingerprint.ts) and the literal values
-- its holes took, set at intake; runs stored before this are fingerprinted when patterns are
-- first listed (lib/review/patterns.ts). Derived from the run's code and capability set, so they
-- are not run content: nothing is sealed by them.
ALTER TABLE "Run" ADD COLUMN "fingerprint" TEXT, ADD COLUMN "fingerprintHoles" JSONB;

CREATE INDEX "Run_fingerprint_createdAt_idx" ON "Run"("fingerprint", "createdAt");
