-- A proposal waiting when another version is published is written against an older policy:
-- approving it would silently undo the newer one. Publishing now marks such proposals
-- `superseded` (lib/policy/store.ts), which no one can approve; their text may be proposed again.
-- The proposals of before this migration are marked by the next one (a value added to an enum
-- cannot be used in the transaction that adds it).

-- AlterEnum
ALTER TYPE "PolicyStatus" ADD VALUE 'superseded';
