/** Tool facts the broker publishes (consumed by policy/intake, the console and the CLI). */
import type { DataClass, PiiTokenKind } from "@/lib/contracts/data-classes";
import type { PreviewHints } from "@/lib/contracts/preview-hints";
import type { QuarantineReason, ToolAnnotations } from "@/lib/contracts/tools";

export type ToolInfo = {
  server: string;
  name: string;
  description: string;
  annotations: ToolAnnotations;
  dataClass: DataClass;
  /** Calls are refused while true; see quarantineReason. */
  quarantined: boolean;
  quarantineReason: QuarantineReason | null;
  /** sha256 over description + inputSchema + outputSchema + annotations (+ preview hints, when declared), canonical JSON. */
  hash: string;
  inputSchema: Record<string, unknown>;
  outputSchema: Record<string, unknown> | null;
  /** The tool's `_meta` preview answer and money pointers (lib/contracts/preview-hints.ts), or null. */
  preview: PreviewHints | null;
  /** From the config: field paths of its results and arguments that hold personal data, and their kind. */
  piiFields: Readonly<Record<string, PiiTokenKind>>;
};
