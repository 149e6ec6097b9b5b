/** graphile-worker's logger, reduced to warnings and errors (its info lines are per-job noise). */
import { Logger } from "graphile-worker";

export const quietQueueLogger = new Logger((scope) => (level, message) => {
  if (level === "error" || level === "warning") {
    console.error(`[queue${scope.label ? `:${scope.label}` : ""}] ${level}: ${message}`);
  }
});
