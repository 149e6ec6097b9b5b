/**
 * The JSON columns of "Run", each with one closed zod schema, parsed on write and on read:
 * `runColumn(run, "findings")` returns the typed value or throws a typed error naming the run and
 * the column, never a value of the wrong shape; `runColumnValue("findings", value)` checks a value
 * before it is written. The schemas accept every shape written since the first release (a column
 * written before it existed is null, and reads say so).
 *
 * `execution` holds what running produced besides the result: stats, logs, flags, artifacts and
 * the gate report (checks, assumptions, a declared partial result, lineage; absent before it
 * existed).
 */
import { z } from "zod";
import { AppError, FINDING_RULES, RUN_ERROR_CODES, type FindingCode, type RunErrorCode } from "@/lib/errors";
import { DATA_CLASSES } from "./data-classes";
import { CHECK_KINDS } from "./script-contract";

const count = z.number().int().nonnegative();
const text = z.string();

const findingCodes = Object.keys(FINDING_RULES) as [FindingCode, ...FindingCode[]];

/** A Cedar request as stored with its decision (lib/policy/request.ts): a run's, or a result's release. */
const policyRequest = z
  .object({
    schemaVersion: count.optional(),
    principal: z.object({ type: text, id: text }).strict(),
    action: z.object({ type: text, id: text }).strict(),
    resource: z.object({ type: text, id: text }).strict(),
    /** `{}` before policy request version 3. */
    context: z
      .object({
        provenance: z.object({ hasModel: z.boolean(), hasPrompt: z.boolean(), hasConversation: z.boolean(), hasContext: z.boolean() }).strict().optional(),
      })
      .strict(),
    entities: z.array(
      z
        .object({
          uid: z.object({ type: text, id: text }).strict(),
          attrs: z.record(text, z.json()),
          parents: z.array(z.object({ type: text, id: text }).strict()),
        })
        .strict(),
    ),
  })
  .strict();

const reasons = z.array(z.object({ policyId: text, text, source: text }).strict());

export const RUN_COLUMN_SCHEMAS = {
  provenance: z.object({ model: text.optional(), conversationId: text.optional(), prompt: text.optional(), context: text.optional() }).strict(),
  inputs: z.array(z.object({ name: text, datasetId: text, sha256: text, dataClass: z.enum(DATA_CLASSES) }).strict()),
  decisionReasons: reasons,
  policyRequest: policyRequest,
  capabilitySet: z.array(text),
  findings: z.array(
    z.object({ code: z.enum(findingCodes), severity: z.enum(["info", "warning", "error", "critical"]), message: text, line: count, column: count }).strict(),
  ),
  /** `{}` until analysis ran (submit and analysis share one transaction, so only hand-made rows show it). */
  facts: z.union([
    z
      .object({
        effect: z.enum(["read_only", "write", "destructive"]),
        openWorld: z.boolean(),
        dataClasses: z.array(z.enum(DATA_CLASSES)),
        toolCount: count,
        /** Absent in runs analysed before they existed. */
        readOnlyDataClasses: z.array(z.enum(DATA_CLASSES)).optional(),
        checks: z.array(z.enum(CHECK_KINDS)).optional(),
      })
      .strict(),
    z.object({}).strict(),
  ]),
  result: z.json(),
  error: z
    .object({
      code: z.enum(RUN_ERROR_CODES as [RunErrorCode, ...RunErrorCode[]]),
      message: text,
      untrusted: z.boolean(),
      /** The tail (≤ 4 KiB) of the script's stack trace, when it threw. */
      detail: text.optional(),
    })
    .strict(),
  execution: z
    .object({
      wallMs: z.number().nonnegative(),
      cpuMs: z.number().nonnegative(),
      peakRssMb: z.number().nonnegative(),
      toolCalls: count,
      logs: z.array(z.object({ level: z.enum(["log", "warn", "error", "debug"]), text }).strict()),
      flags: z.array(text),
      truncated: z.boolean(),
      /** The files under ./out/ (bytes in "ArtifactBlob", lib/runs/artifacts.ts); mediaType is sniffed from the bytes, absent before it was stored. */
      artifacts: z.array(z.object({ name: text, sizeBytes: count, sha256: text, mediaType: text.optional() }).strict()),
      gate: z
        .object({
          checks: z.array(
            z.object({ kind: z.enum(CHECK_KINDS), label: text, ok: z.boolean(), message: text, rows: count.optional(), rowsKey: text.optional() }).strict(),
          ),
          assumptions: z.array(text),
          partial: text.nullable(),
          rows: z.object({ read: z.record(text, count), returned: count.nullable(), covered: count.nullable() }).strict(),
          redactions: z.array(z.object({ where: text, kind: text }).strict()),
        })
        .strict()
        .optional(),
    })
    .strict(),
  /** The writes a plan preview intercepted, in order (lib/runs/plan.ts), and their digest, which approvals bind. */
  plan: z
    .object({
      digest: text,
      writes: z.array(
        z
          .object({
            seq: count,
            server: text,
            tool: text,
            arguments: z.json(),
            answer: z.json(),
            money: z.object({ amount: text, currency: text.nullable(), subject: text.nullable() }).strict().nullable(),
          })
          .strict(),
      ),
    })
    .strict(),
  /**
   * Whether what a run produced reaches its agent: handed over (allow), held for reviewers
   * (escalate: pending_release for a run that succeeded) or withheld (deny), as the published
   * release policies decided when it ended executing (lib/runs/release-decision.ts); null for runs
   * that never executed or predate release.
   */
  releaseDecision: z
    .object({
      decision: z.enum(["allow", "escalate", "deny"]),
      approvalsRequired: count,
      reviewerRole: text.optional(),
      reasons,
      policyVersionId: text.nullable(),
      request: policyRequest,
    })
    .strict(),
  limits: z
    .object({
      timeoutMs: count,
      cpuSeconds: count,
      heapMb: count,
      maxToolCalls: count,
      writeCaps: z.record(text, z.number().int().positive()),
    })
    .strict(),
} as const;

export type RunColumn = keyof typeof RUN_COLUMN_SCHEMAS;
export type RunPlan = RunColumnValue<"plan">;
export type PlanWrite = RunPlan["writes"][number];
export type RunColumnValue<C extends RunColumn> = z.infer<(typeof RUN_COLUMN_SCHEMAS)[C]>;

export class StoredRunInvalid extends AppError {
  constructor(runId: string, column: RunColumn, problem: string) {
    super("stored_data_invalid", `Run ${runId}: the stored ${column} is malformed (${problem}).`, { details: { runId, column } });
  }
}

function problemOf(error: z.ZodError): string {
  const issue = error.issues[0];
  return `${issue?.path.join(".") || "value"}: ${issue?.message ?? "invalid"}`;
}

/** The typed value of a JSON column; null when the column is null. Throws StoredRunInvalid. */
export function runColumn<C extends RunColumn>(run: { id: string } & { [K in C]: unknown }, column: C): RunColumnValue<C> | null {
  const value = run[column];
  if (value === null || value === undefined) return null;
  const parsed = RUN_COLUMN_SCHEMAS[column].safeParse(value);
  if (!parsed.success) throw new StoredRunInvalid(run.id, column, problemOf(parsed.error));
  return parsed.data as RunColumnValue<C>;
}

/** A value about to be written to a JSON column, checked against its schema. */
export function runColumnValue<C extends RunColumn>(column: C, value: RunColumnValue<C>): RunColumnValue<C> {
  const parsed = RUN_COLUMN_SCHEMAS[column].safeParse(value);
  if (!parsed.success) throw new Error(`refusing to write a malformed ${column}: ${problemOf(parsed.error)}`);
  return parsed.data as RunColumnValue<C>;
}
