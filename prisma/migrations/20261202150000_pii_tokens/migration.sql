-- CreateTable
CREATE TABLE "PiiToken" (
    "id" BIGSERIAL NOT NULL,
    "scope" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "n" INTEGER NOT NULL,
    "valueDigest" TEXT NOT NULL,
    "value" TEXT,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lastUsedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "purgedAt" TIMESTAMPTZ(3),

    CONSTRAINT "PiiToken_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "PiiTokenUse" (
    "runId" UUID NOT NULL,
    "tokenIds" BIGINT[],

    CONSTRAINT "PiiTokenUse_pkey" PRIMARY KEY ("runId")
);

-- CreateIndex
CREATE UNIQUE INDEX "PiiToken_scope_kind_valueDigest_key" ON "PiiToken"("scope", "kind", "valueDigest");

-- CreateIndex
CREATE UNIQUE INDEX "PiiToken_scope_kind_n_key" ON "PiiToken"("scope", "kind", "n");

-- CreateIndex
CREATE INDEX "PiiTokenUse_tokenIds_idx" ON "PiiTokenUse" USING GIN ("tokenIds");

-- AddForeignKey
ALTER TABLE "PiiTokenUse" ADD CONSTRAINT "PiiTokenUse_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

