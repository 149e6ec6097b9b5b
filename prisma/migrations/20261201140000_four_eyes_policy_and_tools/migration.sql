-- Hand-written: four eyes on policy publication and on accepting a quarantined tool.
-- A policy version is proposed by one admin and published when a different admin approves it.
ALTER TYPE "PolicyStatus" ADD VALUE 'proposed' BEFORE 'published';

-- A quarantined tool's definition is pinned only when a second admin accepts the hash a first one asked for.
ALTER TABLE "UpstreamTool" ADD COLUMN "acceptanceRequestedHash" TEXT,
ADD COLUMN "acceptanceRequestedById" UUID,
ADD COLUMN "acceptanceRequestedAt" TIMESTAMPTZ(3);

ALTER TABLE "UpstreamTool" ADD CONSTRAINT "UpstreamTool_acceptanceRequestedById_fkey" FOREIGN KEY ("acceptanceRequestedById") REFERENCES "User"("id") ON DELETE SET NULL ON UPDATE CASCADE;
