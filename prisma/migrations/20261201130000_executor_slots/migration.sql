-- CreateTable
CREATE TABLE "Executor" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "slots" INTEGER NOT NULL,
    "startedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "heartbeatAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Executor_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "RunSlot" (
    "runId" UUID NOT NULL,
    "executorId" UUID,
    "since" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "RunSlot_pkey" PRIMARY KEY ("runId")
);

-- CreateIndex
CREATE INDEX "RunSlot_executorId_idx" ON "RunSlot"("executorId");

-- AddForeignKey
ALTER TABLE "RunSlot" ADD CONSTRAINT "RunSlot_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "RunSlot" ADD CONSTRAINT "RunSlot_executorId_fkey" FOREIGN KEY ("executorId") REFERENCES "Executor"("id") ON DELETE CASCADE ON UPDATE CASCADE;
