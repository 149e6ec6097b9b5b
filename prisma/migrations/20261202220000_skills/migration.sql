-- CreateEnum
CREATE TYPE "SkillVersionStatus" AS ENUM ('draft', 'published', 'rejected');

-- AlterTable
ALTER TABLE "Run" ADD COLUMN     "skills" JSONB NOT NULL DEFAULT '[]',
ADD COLUMN     "standingApprovalId" UUID;

-- CreateTable
CREATE TABLE "Skill" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Skill_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "SkillVersion" (
    "id" UUID NOT NULL,
    "skillId" UUID NOT NULL,
    "version" INTEGER NOT NULL,
    "status" "SkillVersionStatus" NOT NULL DEFAULT 'draft',
    "description" TEXT NOT NULL,
    "language" "Language" NOT NULL,
    "code" TEXT NOT NULL,
    "inputSchema" JSONB NOT NULL,
    "outputSchema" JSONB NOT NULL,
    "fingerprint" TEXT NOT NULL,
    "capabilitySet" JSONB NOT NULL DEFAULT '[]',
    "tests" JSONB NOT NULL DEFAULT '[]',
    "skipped" JSONB NOT NULL DEFAULT '{}',
    "contentDigest" TEXT NOT NULL,
    "testReport" JSONB,
    "draftedById" UUID NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "decidedAt" TIMESTAMPTZ(3),

    CONSTRAINT "SkillVersion_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "SkillReview" (
    "id" UUID NOT NULL,
    "skillVersionId" UUID NOT NULL,
    "reviewerId" UUID NOT NULL,
    "verdict" "Verdict" NOT NULL,
    "comment" TEXT,
    "contentDigest" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "SkillReview_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "StandingApproval" (
    "id" UUID NOT NULL,
    "skillVersionId" UUID NOT NULL,
    "agentIds" UUID[],
    "bounds" JSONB NOT NULL,
    "notBefore" TIMESTAMPTZ(3) NOT NULL,
    "notAfter" TIMESTAMPTZ(3) NOT NULL,
    "maxUses" INTEGER NOT NULL,
    "uses" INTEGER NOT NULL DEFAULT 0,
    "reason" TEXT NOT NULL,
    "proposedById" UUID NOT NULL,
    "proposedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "confirmedById" UUID,
    "confirmedAt" TIMESTAMPTZ(3),
    "revokedById" UUID,
    "revokedAt" TIMESTAMPTZ(3),

    CONSTRAINT "StandingApproval_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "Skill_name_key" ON "Skill"("name");

-- CreateIndex
CREATE UNIQUE INDEX "SkillVersion_skillId_version_key" ON "SkillVersion"("skillId", "version");

-- CreateIndex
CREATE UNIQUE INDEX "SkillReview_skillVersionId_reviewerId_key" ON "SkillReview"("skillVersionId", "reviewerId");

-- CreateIndex
CREATE INDEX "StandingApproval_skillVersionId_idx" ON "StandingApproval"("skillVersionId");

-- AddForeignKey
ALTER TABLE "Run" ADD CONSTRAINT "Run_standingApprovalId_fkey" FOREIGN KEY ("standingApprovalId") REFERENCES "StandingApproval"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "SkillVersion" ADD CONSTRAINT "SkillVersion_skillId_fkey" FOREIGN KEY ("skillId") REFERENCES "Skill"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "SkillVersion" ADD CONSTRAINT "SkillVersion_draftedById_fkey" FOREIGN KEY ("draftedById") REFERENCES "User"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "SkillReview" ADD CONSTRAINT "SkillReview_skillVersionId_fkey" FOREIGN KEY ("skillVersionId") REFERENCES "SkillVersion"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "SkillReview" ADD CONSTRAINT "SkillReview_reviewerId_fkey" FOREIGN KEY ("reviewerId") REFERENCES "User"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "StandingApproval" ADD CONSTRAINT "StandingApproval_skillVersionId_fkey" FOREIGN KEY ("skillVersionId") REFERENCES "SkillVersion"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "StandingApproval" ADD CONSTRAINT "StandingApproval_proposedById_fkey" FOREIGN KEY ("proposedById") REFERENCES "User"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "StandingApproval" ADD CONSTRAINT "StandingApproval_confirmedById_fkey" FOREIGN KEY ("confirmedById") REFERENCES "User"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "StandingApproval" ADD CONSTRAINT "StandingApproval_revokedById_fkey" FOREIGN KEY ("revokedById") REFERENCES "User"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- Hand-written (lib/skills): a standing approval counts its uses up to its budget and no further,
-- and a skill version's content is fixed once drafted: only its status, test report and decision
-- time change, and a published or rejected version stays so.
ALTER TABLE "StandingApproval"
  ADD CONSTRAINT "StandingApproval_uses_check" CHECK ("uses" >= 0 AND "uses" <= "maxUses"),
  ADD CONSTRAINT "StandingApproval_maxUses_check" CHECK ("maxUses" >= 1),
  ADD CONSTRAINT "StandingApproval_window_check" CHECK ("notAfter" > "notBefore"),
  ADD CONSTRAINT "StandingApproval_confirmer_check" CHECK ("confirmedById" IS NULL OR "confirmedById" <> "proposedById");

CREATE FUNCTION airlock_skill_version_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'skill versions are never deleted';
  END IF;
  IF (NEW."skillId", NEW."version", NEW."description", NEW."language", NEW."code", NEW."inputSchema", NEW."outputSchema",
      NEW."fingerprint", NEW."capabilitySet", NEW."tests", NEW."skipped", NEW."contentDigest", NEW."draftedById")
     IS DISTINCT FROM
     (OLD."skillId", OLD."version", OLD."description", OLD."language", OLD."code", OLD."inputSchema", OLD."outputSchema",
      OLD."fingerprint", OLD."capabilitySet", OLD."tests", OLD."skipped", OLD."contentDigest", OLD."draftedById") THEN
    RAISE EXCEPTION 'a skill version''s content cannot change; draft a new version';
  END IF;
  IF OLD."status" <> 'draft' AND (NEW."status" <> OLD."status" OR NEW."testReport" IS DISTINCT FROM OLD."testReport") THEN
    RAISE EXCEPTION 'skill version % is % and cannot change', OLD."id", OLD."status";
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER "SkillVersion_guard" BEFORE UPDATE OR DELETE ON "SkillVersion" FOR EACH ROW EXECUTE FUNCTION airlock_skill_version_guard();
