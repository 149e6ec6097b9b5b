"use server";
/**
 * Server actions of the audit page. Public endpoints like any server action: each one resolves
 * the signed-in user from the database and checks the scope before doing anything.
 */
import { revalidatePath } from "next/cache";
import type { VerifyActionState } from "@/components/audit/verification-panel";
import { checkpointConfigFromEnv } from "@/lib/audit/checkpoints";
import { lastVerification } from "@/lib/audit/presenter";
import { runVerification } from "@/lib/audit/service";
import { currentUser } from "@/lib/auth/session";
import { requireScope } from "@/lib/contracts/scopes";
import { prisma } from "@/lib/db";
import { toPublicError } from "@/lib/errors";

/** Verifies the whole chain now (audited as "audit.verified"; signs a checkpoint when it holds). */
export async function verifyAuditAction(sent: unknown): Promise<VerifyActionState> {
  // A public endpoint: the previous state is whatever a client sent, so only its own shape is kept.
  const previous = sent && typeof sent === "object" && "last" in sent ? (sent as VerifyActionState) : { error: null, last: null };
  try {
    const user = await currentUser();
    requireScope(user, "audit:read");
    await runVerification(prisma(), user, checkpointConfigFromEnv());
    revalidatePath("/audit");
    return { error: null, last: await lastVerification(prisma()) };
  } catch (error) {
    const failure = toPublicError(error);
    if (failure.code === "internal") console.error("audit verification failed", error);
    return { error: failure.code === "internal" ? "Verification could not run; see the server log." : failure.message, last: previous.last };
  }
}
