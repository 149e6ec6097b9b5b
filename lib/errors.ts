/**
 * Typed errors. Every failure that crosses a boundary (HTTP, MCP, server action, CLI) is an
 * AppError with a code from APP_ERROR_STATUS; the code decides what the caller sees, and the
 * cause is kept for server-side logs, never shown. Anything that is not an AppError is reported
 * as `internal` without its message (see toPublicError).
 *
 * Run outcomes are a separate, closed vocabulary (RUN_ERROR_CODES): they are what an agent acts on
 * in a run's result envelope (DESIGN.md step 9), not request failures.
 */

export const APP_ERROR_STATUS = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  rate_limited: 429,
  config_invalid: 500,
  database_unavailable: 503,
  internal: 500,
} as const satisfies Record<string, number>;

export type AppErrorCode = keyof typeof APP_ERROR_STATUS;

export class AppError extends Error {
  readonly code: AppErrorCode;
  /** Structured, safe-to-show detail (e.g. which field was wrong). */
  readonly details?: Record<string, unknown>;

  constructor(
    code: AppErrorCode,
    message: string,
    options: { cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = "AppError";
    this.code = code;
    this.details = options.details;
  }

  get status(): number {
    return APP_ERROR_STATUS[this.code];
  }
}

export function isAppError(error: unknown): error is AppError {
  return error instanceof AppError;
}

/** What a caller may see of any thrown value: typed errors keep their message, others do not. */
export function toPublicError(error: unknown): {
  code: AppErrorCode;
  message: string;
  status: number;
  details?: Record<string, unknown>;
} {
  if (isAppError(error)) {
    return { code: error.code, message: error.message, status: error.status, details: error.details };
  }
  return { code: "internal", message: "Internal error", status: 500 };
}

/** The typed codes of a run's result envelope. An agent branches on these. */
export const RUN_ERROR_CODES = [
  "POLICY_DENIED",
  "REVIEW_REJECTED",
  "REVIEW_EXPIRED",
  "CHANGES_REQUESTED",
  "CAPABILITY_DENIED",
  "TIMEOUT",
  "MEMORY_LIMIT",
  "OUTPUT_LIMIT",
  "TOOL_ERROR",
  "SCRIPT_ERROR",
  "SANDBOX_UNAVAILABLE",
  "BUDGET_EXCEEDED",
  "CANCELLED",
  "EXECUTOR_LOST",
  "RPC_VIOLATION",
] as const;

export type RunErrorCode = (typeof RUN_ERROR_CODES)[number];
