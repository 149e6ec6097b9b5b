-- Hand-edited: the engine's diff began with `CREATE SCHEMA IF NOT EXISTS "public";`, removed
-- because PostgreSQL checks the database-level CREATE privilege before IF NOT EXISTS, so it fails
-- for a deploy role that may create tables in "public" but not schemas (prisma/migrate#501).

-- CreateEnum
CREATE TYPE "Role" AS ENUM ('admin', 'reviewer', 'compliance');

-- CreateEnum
CREATE TYPE "RunStatus" AS ENUM ('submitted', 'analyzed', 'denied', 'auto_approved', 'pending_review', 'approved', 'rejected', 'changes_requested', 'expired', 'queued', 'running', 'succeeded', 'failed', 'timed_out', 'cancelled');

-- CreateEnum
CREATE TYPE "Language" AS ENUM ('typescript', 'javascript');

-- CreateEnum
CREATE TYPE "Decision" AS ENUM ('allow', 'escalate', 'deny');

-- CreateEnum
CREATE TYPE "Verdict" AS ENUM ('approve', 'reject', 'request_changes');

-- CreateEnum
CREATE TYPE "DataClass" AS ENUM ('public', 'internal', 'confidential', 'pii', 'financial', 'phi');

-- CreateEnum
CREATE TYPE "PolicyStatus" AS ENUM ('draft', 'published', 'retired');

-- CreateEnum
CREATE TYPE "UpstreamTransport" AS ENUM ('stdio', 'http');

-- CreateTable
CREATE TABLE "User" (
    "id" UUID NOT NULL,
    "email" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "role" "Role" NOT NULL,
    "passwordHash" TEXT,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "disabledAt" TIMESTAMPTZ(3),

    CONSTRAINT "User_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "LoginAttempt" (
    "id" BIGSERIAL NOT NULL,
    "email" TEXT NOT NULL,
    "succeeded" BOOLEAN NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "LoginAttempt_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Agent" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "ownerId" UUID NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revokedAt" TIMESTAMPTZ(3),

    CONSTRAINT "Agent_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "AgentToken" (
    "id" UUID NOT NULL,
    "agentId" UUID NOT NULL,
    "tokenHash" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "scopes" TEXT[],
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" TIMESTAMPTZ(3),
    "lastUsedAt" TIMESTAMPTZ(3),
    "revokedAt" TIMESTAMPTZ(3),

    CONSTRAINT "AgentToken_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Run" (
    "id" UUID NOT NULL,
    "agentId" UUID NOT NULL,
    "status" "RunStatus" NOT NULL DEFAULT 'submitted',
    "language" "Language" NOT NULL,
    "code" TEXT NOT NULL,
    "codeSha256" TEXT NOT NULL,
    "purpose" TEXT NOT NULL,
    "provenance" JSONB NOT NULL DEFAULT '{}',
    "inputs" JSONB NOT NULL DEFAULT '[]',
    "inputsDigest" TEXT NOT NULL,
    "idempotencyKey" TEXT,
    "requestDigest" TEXT NOT NULL,
    "decision" "Decision",
    "decisionReasons" JSONB NOT NULL DEFAULT '[]',
    "approvalsRequired" INTEGER NOT NULL DEFAULT 0,
    "policyVersionId" UUID,
    "policyRequest" JSONB,
    "reviewerRole" TEXT,
    "capabilitySet" JSONB NOT NULL DEFAULT '[]',
    "findings" JSONB NOT NULL DEFAULT '[]',
    "facts" JSONB NOT NULL DEFAULT '{}',
    "javascript" TEXT,
    "result" JSONB,
    "error" JSONB,
    "stats" JSONB,
    "isolation" TEXT,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,
    "startedAt" TIMESTAMPTZ(3),
    "finishedAt" TIMESTAMPTZ(3),
    "reviewExpiresAt" TIMESTAMPTZ(3),
    "cancelRequestedAt" TIMESTAMPTZ(3),
    "executorId" TEXT,
    "heartbeatAt" TIMESTAMPTZ(3),

    CONSTRAINT "Run_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "RunToolCall" (
    "id" BIGSERIAL NOT NULL,
    "runId" UUID NOT NULL,
    "seq" INTEGER NOT NULL,
    "server" TEXT NOT NULL,
    "tool" TEXT NOT NULL,
    "argsDigest" TEXT NOT NULL,
    "resultDigest" TEXT,
    "args" JSONB,
    "result" JSONB,
    "durationMs" INTEGER NOT NULL,
    "outcome" TEXT NOT NULL,
    "error" TEXT,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "RunToolCall_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Review" (
    "id" UUID NOT NULL,
    "runId" UUID NOT NULL,
    "reviewerId" UUID NOT NULL,
    "verdict" "Verdict" NOT NULL,
    "comment" TEXT,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Review_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Dataset" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "dataClass" "DataClass" NOT NULL,
    "sha256" TEXT NOT NULL,
    "sizeBytes" INTEGER NOT NULL,
    "mediaType" TEXT NOT NULL,
    "content" BYTEA NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Dataset_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "UpstreamServer" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "transport" "UpstreamTransport" NOT NULL,
    "endpoint" JSONB NOT NULL,
    "dataClass" "DataClass" NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "UpstreamServer_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "UpstreamTool" (
    "id" UUID NOT NULL,
    "serverId" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT NOT NULL,
    "inputSchema" JSONB NOT NULL,
    "outputSchema" JSONB,
    "annotations" JSONB NOT NULL DEFAULT '{}',
    "dataClass" "DataClass",
    "schemaHash" TEXT NOT NULL,
    "pinnedHash" TEXT NOT NULL,
    "quarantined" BOOLEAN NOT NULL DEFAULT false,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "UpstreamTool_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "PolicyVersion" (
    "id" UUID NOT NULL,
    "version" INTEGER NOT NULL,
    "status" "PolicyStatus" NOT NULL DEFAULT 'draft',
    "text" TEXT NOT NULL,
    "createdById" UUID,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "publishedById" UUID,
    "publishedAt" TIMESTAMPTZ(3),

    CONSTRAINT "PolicyVersion_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "AuditEvent" (
    "id" BIGSERIAL NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "actorType" TEXT NOT NULL,
    "actorId" TEXT,
    "action" TEXT NOT NULL,
    "subjectType" TEXT NOT NULL,
    "subjectId" TEXT,
    "data" JSONB NOT NULL DEFAULT '{}',
    "prevHash" TEXT NOT NULL,
    "hash" TEXT NOT NULL,

    CONSTRAINT "AuditEvent_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "User_email_key" ON "User"("email");

-- CreateIndex
CREATE INDEX "LoginAttempt_email_at_idx" ON "LoginAttempt"("email", "at");

-- CreateIndex
CREATE UNIQUE INDEX "Agent_name_key" ON "Agent"("name");

-- CreateIndex
CREATE UNIQUE INDEX "AgentToken_tokenHash_key" ON "AgentToken"("tokenHash");

-- CreateIndex
CREATE INDEX "AgentToken_agentId_idx" ON "AgentToken"("agentId");

-- CreateIndex
CREATE INDEX "Run_status_createdAt_idx" ON "Run"("status", "createdAt");

-- CreateIndex
CREATE INDEX "Run_codeSha256_idx" ON "Run"("codeSha256");

-- CreateIndex
CREATE UNIQUE INDEX "Run_agentId_idempotencyKey_key" ON "Run"("agentId", "idempotencyKey");

-- CreateIndex
CREATE UNIQUE INDEX "RunToolCall_runId_seq_key" ON "RunToolCall"("runId", "seq");

-- CreateIndex
CREATE UNIQUE INDEX "Review_runId_reviewerId_key" ON "Review"("runId", "reviewerId");

-- CreateIndex
CREATE UNIQUE INDEX "Dataset_name_key" ON "Dataset"("name");

-- CreateIndex
CREATE UNIQUE INDEX "UpstreamServer_name_key" ON "UpstreamServer"("name");

-- CreateIndex
CREATE UNIQUE INDEX "UpstreamTool_serverId_name_key" ON "UpstreamTool"("serverId", "name");

-- CreateIndex
CREATE UNIQUE INDEX "PolicyVersion_version_key" ON "PolicyVersion"("version");

-- CreateIndex
CREATE UNIQUE INDEX "AuditEvent_hash_key" ON "AuditEvent"("hash");

-- CreateIndex
CREATE INDEX "AuditEvent_subjectType_subjectId_idx" ON "AuditEvent"("subjectType", "subjectId");

-- CreateIndex
CREATE INDEX "AuditEvent_action_at_idx" ON "AuditEvent"("action", "at");

-- AddForeignKey
ALTER TABLE "Agent" ADD CONSTRAINT "Agent_ownerId_fkey" FOREIGN KEY ("ownerId") REFERENCES "User"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "AgentToken" ADD CONSTRAINT "AgentToken_agentId_fkey" FOREIGN KEY ("agentId") REFERENCES "Agent"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Run" ADD CONSTRAINT "Run_agentId_fkey" FOREIGN KEY ("agentId") REFERENCES "Agent"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Run" ADD CONSTRAINT "Run_policyVersionId_fkey" FOREIGN KEY ("policyVersionId") REFERENCES "PolicyVersion"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "RunToolCall" ADD CONSTRAINT "RunToolCall_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Review" ADD CONSTRAINT "Review_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Review" ADD CONSTRAINT "Review_reviewerId_fkey" FOREIGN KEY ("reviewerId") REFERENCES "User"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "UpstreamTool" ADD CONSTRAINT "UpstreamTool_serverId_fkey" FOREIGN KEY ("serverId") REFERENCES "UpstreamServer"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PolicyVersion" ADD CONSTRAINT "PolicyVersion_createdById_fkey" FOREIGN KEY ("createdById") REFERENCES "User"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PolicyVersion" ADD CONSTRAINT "PolicyVersion_publishedById_fkey" FOREIGN KEY ("publishedById") REFERENCES "User"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- Hand-written (not generated from schema.prisma): the audit log is append-only.
-- Row-level BEFORE triggers refuse UPDATE and DELETE; a statement-level trigger refuses TRUNCATE,
-- which row triggers do not see. Changing history needs a migration that drops these triggers,
-- which is itself reviewed and recorded in _prisma_migrations.
CREATE FUNCTION "audit_event_append_only"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_events is append-only: % on "AuditEvent" is not allowed', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER "AuditEvent_no_update_delete"
  BEFORE UPDATE OR DELETE ON "AuditEvent"
  FOR EACH ROW EXECUTE FUNCTION "audit_event_append_only"();

CREATE TRIGGER "AuditEvent_no_truncate"
  BEFORE TRUNCATE ON "AuditEvent"
  FOR EACH STATEMENT EXECUTE FUNCTION "audit_event_append_only"();
