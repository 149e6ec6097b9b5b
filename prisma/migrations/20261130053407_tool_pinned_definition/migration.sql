-- AlterTable
ALTER TABLE "UpstreamTool" ADD COLUMN     "pinnedDefinition" JSONB;
