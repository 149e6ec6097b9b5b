-- Sessions: a person's session version, carried in the cookie and raised by sign-out.
ALTER TABLE "User" ADD COLUMN "sessionVersion" INTEGER NOT NULL DEFAULT 0;

-- Sign-in throttle: failures are counted per account at an address and per address.
ALTER TABLE "LoginAttempt" ADD COLUMN "address" TEXT;

-- CreateIndex
CREATE INDEX "LoginAttempt_email_address_at_idx" ON "LoginAttempt"("email", "address", "at");

-- CreateIndex
CREATE INDEX "LoginAttempt_address_at_idx" ON "LoginAttempt"("address", "at");
