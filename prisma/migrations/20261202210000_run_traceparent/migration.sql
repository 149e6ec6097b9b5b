-- AlterTable
ALTER TABLE "Run" ADD COLUMN     "traceparent" TEXT;
