/**
 * The console's preview of an artifact, built on the server from its bytes and its sniffed media
 * type (./artifacts-media.ts): a CSV as a table, JSON as a tree, a PNG or an SVG as an image the
 * browser fetches from the image route, anything else nothing. Pure: no database, no I/O.
 *
 * Guarantees: a preview is plain data whose every string from the file is inert text
 * (lib/untrusted/inert.ts), to be rendered as React text nodes (components/run/artifacts.tsx) —
 * never HTML, never markup of the file's own; it is bounded whatever the file holds: only files up
 * to PREVIEW_MAX_BYTES are parsed, a table keeps the first 200 rows and 30 columns with cells cut
 * at 500 characters, a tree keeps 12 levels and 2,000 nodes (what is cut is counted). A file that
 * does not parse gets no preview, with the reason; parsing never throws.
 */
import { parse } from "csv-parse/sync";
import { inertText } from "@/lib/untrusted/inert";
import { parseSafeJson, type JsonValue } from "@/lib/untrusted/safe-json";
import type { ArtifactMediaType } from "./artifacts-media";

export const PREVIEW_MAX_BYTES = 1024 * 1024;
export const TABLE_MAX_ROWS = 200;
export const TABLE_MAX_COLUMNS = 30;
const CELL_MAX_CHARS = 500;
export const TREE_MAX_DEPTH = 12;
export const TREE_MAX_NODES = 2_000;
const VALUE_MAX_CHARS = 1_000;

export type TablePreview = {
  kind: "table";
  header: string[];
  rows: string[][];
  /** Rows or columns were cut at the caps. */
  truncated: boolean;
};

export type TreeNode = {
  /** The key in its parent object, or the index in its parent array; null for the root. */
  key: string | null;
  type: "object" | "array" | "string" | "number" | "boolean" | "null";
  /** A scalar's value as text (strings inert, without quotes). */
  value?: string;
  /** Entries shown of an object or array. */
  children?: TreeNode[];
  /** Entries of an object or array not shown (cut at the depth or node cap). */
  hidden?: number;
};

export type TreePreview = { kind: "tree"; root: TreeNode; truncated: boolean };
export type ImagePreview = { kind: "image" };
export type NoPreview = { kind: "none"; reason: string };
export type ArtifactPreview = TablePreview | TreePreview | ImagePreview | NoPreview;

export function needsBytesForPreview(mediaType: string, sizeBytes: number): boolean {
  return (mediaType === "text/csv" || mediaType === "application/json") && sizeBytes <= PREVIEW_MAX_BYTES;
}

export function csvPreview(bytes: Buffer): ArtifactPreview {
  let records: string[][];
  try {
    records = parse(bytes, {
      bom: true,
      relax_column_count: true,
      relax_quotes: true,
      skip_empty_lines: true,
      to: TABLE_MAX_ROWS + 2,
      max_record_size: 256 * 1024,
    }) as string[][];
  } catch (error) {
    return { kind: "none", reason: `not a CSV file this preview can read (${inertText(error instanceof Error ? error.message : String(error), 200)})` };
  }
  if (records.length === 0) return { kind: "none", reason: "the CSV file is empty" };
  const width = Math.max(...records.map((r) => r.length));
  const columns = Math.min(width, TABLE_MAX_COLUMNS);
  const cells = (record: string[]) => Array.from({ length: columns }, (_, i) => inertText(record[i] ?? "", CELL_MAX_CHARS));
  const body = records.slice(1, TABLE_MAX_ROWS + 1);
  return {
    kind: "table",
    header: cells(records[0]!),
    rows: body.map(cells),
    truncated: width > TABLE_MAX_COLUMNS || records.length > TABLE_MAX_ROWS + 1,
  };
}

export function jsonPreview(bytes: Buffer): ArtifactPreview {
  let value: JsonValue;
  try {
    value = parseSafeJson(bytes.toString("utf8").replace(/^\uFEFF/, ""), { maxDepth: 256, maxNodes: 1_000_000 });
  } catch (error) {
    return { kind: "none", reason: `not JSON this preview can read (${error instanceof Error ? error.message : "invalid"})` };
  }
  let budget = TREE_MAX_NODES;
  let truncated = false;
  const node = (key: string | null, v: JsonValue, depth: number): TreeNode => {
    budget--;
    const label = key === null ? null : inertText(key, 200);
    if (v === null) return { key: label, type: "null", value: "null" };
    if (typeof v === "string") return { key: label, type: "string", value: inertText(v, VALUE_MAX_CHARS) };
    if (typeof v === "number" || typeof v === "boolean") return { key: label, type: typeof v as "number" | "boolean", value: String(v) };
    const entries: [string, JsonValue][] = Array.isArray(v) ? v.map((item, i) => [String(i), item]) : Object.entries(v);
    const children: TreeNode[] = [];
    if (depth < TREE_MAX_DEPTH) {
      for (const [k, item] of entries) {
        if (budget <= 0) break;
        children.push(node(k, item, depth + 1));
      }
    }
    const hidden = entries.length - children.length;
    if (hidden > 0) truncated = true;
    return { key: label, type: Array.isArray(v) ? "array" : "object", children, ...(hidden > 0 ? { hidden } : {}) };
  };
  const root = node(null, value, 0);
  return { kind: "tree", root, truncated };
}

/**
 * The preview of one artifact. `bytes` is what ./artifacts.ts loaded for it (only for a CSV or
 * JSON file within PREVIEW_MAX_BYTES), null otherwise; `purged` when retention deleted the bytes.
 */
export function artifactPreview(
  artifact: { mediaType: ArtifactMediaType | string; sizeBytes: number },
  bytes: Buffer | null,
  purged: boolean,
): ArtifactPreview {
  if (purged) return { kind: "none", reason: "the bytes were purged by retention" };
  switch (artifact.mediaType) {
    case "image/png":
    case "image/svg+xml":
      return { kind: "image" };
    case "text/csv":
    case "application/json":
      if (artifact.sizeBytes > PREVIEW_MAX_BYTES) return { kind: "none", reason: `larger than ${PREVIEW_MAX_BYTES / 1024} KiB; download it to read it` };
      if (bytes === null) return { kind: "none", reason: "the bytes were not kept" };
      return artifact.mediaType === "text/csv" ? csvPreview(bytes) : jsonPreview(bytes);
    default:
      return { kind: "none", reason: `no preview for ${artifact.mediaType}` };
  }
}
