-- Hand-written: a tool an upstream adds after first start is quarantined until two admins accept
-- it; two admins can override a tool's annotations and data class; who accepted what is kept.

-- AlterTable
ALTER TABLE "UpstreamServer" ADD COLUMN "firstListingAcceptedBy" TEXT;

-- AlterTable
ALTER TABLE "UpstreamTool" ADD COLUMN "claimedAnnotations" JSONB NOT NULL DEFAULT '{}',
ADD COLUMN "configDataClass" "DataClass",
ADD COLUMN "acceptedAt" TIMESTAMPTZ(3),
ADD COLUMN "acceptedBy" TEXT[] DEFAULT ARRAY[]::TEXT[],
ALTER COLUMN "pinnedHash" DROP NOT NULL;

-- Until now the stored annotations and data class were the upstream's claims and the config's class.
UPDATE "UpstreamTool" SET "claimedAnnotations" = "annotations", "configDataClass" = "dataClass";

-- CreateTable
CREATE TABLE "ToolOverride" (
    "id" UUID NOT NULL,
    "toolId" UUID NOT NULL,
    "facts" JSONB NOT NULL,
    "proposedById" UUID NOT NULL,
    "proposedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "confirmedById" UUID,
    "confirmedAt" TIMESTAMPTZ(3),
    "withdrawnAt" TIMESTAMPTZ(3),

    CONSTRAINT "ToolOverride_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "ToolOverride_toolId_confirmedAt_idx" ON "ToolOverride"("toolId", "confirmedAt");

-- AddForeignKey
ALTER TABLE "ToolOverride" ADD CONSTRAINT "ToolOverride_toolId_fkey" FOREIGN KEY ("toolId") REFERENCES "UpstreamTool"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ToolOverride" ADD CONSTRAINT "ToolOverride_proposedById_fkey" FOREIGN KEY ("proposedById") REFERENCES "User"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ToolOverride" ADD CONSTRAINT "ToolOverride_confirmedById_fkey" FOREIGN KEY ("confirmedById") REFERENCES "User"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- Hand-written: at most one proposal waits per tool, and nobody confirms their own.
CREATE UNIQUE INDEX "ToolOverride_one_waiting_key" ON "ToolOverride"("toolId") WHERE "confirmedAt" IS NULL AND "withdrawnAt" IS NULL;
ALTER TABLE "ToolOverride" ADD CONSTRAINT "ToolOverride_four_eyes" CHECK ("confirmedById" IS NULL OR "confirmedById" <> "proposedById");
