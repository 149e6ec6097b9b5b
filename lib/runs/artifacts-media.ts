/**
 * What a file a script wrote under ./out/ is, decided from its bytes, and how it may travel over
 * HTTP. Pure: no database, no I/O.
 *
 * Guarantees:
 * - `sniffMediaType` never trusts the name alone: image/png only with the PNG signature and an
 *   IHDR chunk first; image/svg+xml only for UTF-8 text whose root element is `<svg` (after an
 *   optional BOM, XML declaration, comments and a DOCTYPE without an internal subset);
 *   application/json only for text that parses as a JSON object or array; text/csv only for UTF-8
 *   text without NUL named `*.csv` (the one type a name is needed for, and it only ever becomes a
 *   table of text); other text is text/plain, everything else application/octet-stream. An HTML
 *   file named `x.png` is text/plain;
 * - `imageContentType` re-checks the bytes at the moment an image is served: a type only for a
 *   real PNG or SVG, null for anything else;
 * - `hostileContentHeaders`: every response carrying artifact bytes says `Content-Security-Policy:
 *   sandbox; default-src 'none'`, `X-Content-Type-Options: nosniff`, `Content-Disposition:
 *   attachment` with the name encoded (RFC 6266 / 8187: an ASCII fallback with everything else
 *   replaced by `_`, and `filename*=UTF-8''` percent-encoding every byte outside attr-char), is
 *   same-origin only (`Cross-Origin-Resource-Policy`) and never cached. A download is
 *   application/octet-stream; only the image route (for `<img>`) sends an image type.
 * - `isArtifactName` is the sandbox's rule for names under ./out/ (lib/sandbox/rpc-session.ts),
 *   checked again wherever a name arrives from outside (storage, URLs).
 */

export const ARTIFACT_MEDIA_TYPES = ["image/png", "image/svg+xml", "application/json", "text/csv", "text/plain", "application/octet-stream"] as const;
export type ArtifactMediaType = (typeof ARTIFACT_MEDIA_TYPES)[number];
export type ImageMediaType = Extract<ArtifactMediaType, "image/png" | "image/svg+xml">;

/** A-Z a-z 0-9 . _ - /, 1–512 characters, no empty, `.` or `..` segment (as the sandbox refuses). */
const ARTIFACT_NAME = /^(?!.*(?:^|\/)\.\.?(?:\/|$))(?!.*\/\/)(?!\/)(?!.*\/$)[A-Za-z0-9._/-]{1,512}$/;

export function isArtifactName(name: string): boolean {
  return ARTIFACT_NAME.test(name);
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function isPng(bytes: Buffer): boolean {
  return bytes.length >= 24 && bytes.subarray(0, 8).equals(PNG_SIGNATURE) && bytes.toString("latin1", 12, 16) === "IHDR";
}

/** The bytes as UTF-8 text, or null when they are not valid UTF-8 or hold a NUL. */
function utf8Text(bytes: Buffer): string | null {
  if (bytes.includes(0)) return null;
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return null;
  }
}

/** What may precede an SVG root: whitespace, one XML declaration, comments, one DOCTYPE (no internal subset). */
const SVG_PROLOGUE = /^\uFEFF?\s*(?:<\?xml[^?]*\?>\s*)?(?:<!--[\s\S]*?-->\s*)*(?:<!DOCTYPE[^[>]*>\s*)?(?:<!--[\s\S]*?-->\s*)*<svg[\s/>]/;

function isSvg(text: string): boolean {
  return SVG_PROLOGUE.test(text.slice(0, 64 * 1024));
}

function isJsonDocument(text: string): boolean {
  const start = text.replace(/^\uFEFF/, "").trimStart()[0];
  if (start !== "{" && start !== "[") return false;
  try {
    JSON.parse(text.replace(/^\uFEFF/, ""));
    return true;
  } catch {
    return false;
  }
}

export function sniffMediaType(name: string, bytes: Buffer): ArtifactMediaType {
  if (isPng(bytes)) return "image/png";
  const text = utf8Text(bytes);
  if (text === null) return "application/octet-stream";
  if (isSvg(text)) return "image/svg+xml";
  if (isJsonDocument(text)) return "application/json";
  if (/\.csv$/i.test(name)) return "text/csv";
  return "text/plain";
}

/** The image type to serve these bytes as, checked now; null when they are not a PNG or an SVG. */
export function imageContentType(name: string, bytes: Buffer): ImageMediaType | null {
  const type = sniffMediaType(name, bytes);
  return type === "image/png" || type === "image/svg+xml" ? type : null;
}

/** The policy for a response carrying bytes a hostile script wrote: no script, no subresource, no plugin, a unique origin. */
export const HOSTILE_CONTENT_CSP = "sandbox; default-src 'none'";

/** attr-char of RFC 8187; every other byte of the UTF-8 name is percent-encoded. */
const ATTR_CHAR = /[A-Za-z0-9!#$&+.^_`|~-]/;

export function contentDisposition(name: string): string {
  const file = name.slice(name.lastIndexOf("/") + 1) || "artifact";
  const fallback = file.replace(/[^A-Za-z0-9._-]/g, "_");
  const encoded = [...Buffer.from(file, "utf8")]
    .map((byte) => {
      const char = String.fromCharCode(byte);
      return byte < 0x80 && ATTR_CHAR.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
    })
    .join("");
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

export function hostileContentHeaders(artifact: { name: string; sha256: string; sizeBytes: number }, contentType: "application/octet-stream" | ImageMediaType) {
  return {
    "content-type": contentType,
    "content-length": String(artifact.sizeBytes),
    "content-disposition": contentDisposition(artifact.name),
    "content-security-policy": HOSTILE_CONTENT_CSP,
    "x-content-type-options": "nosniff",
    "cross-origin-resource-policy": "same-origin",
    "cache-control": "private, no-store",
    "x-airlock-artifact-sha256": artifact.sha256,
  };
}

export type ArtifactRoute = "download" | "image";

/** The console's URL for one artifact of a run: each path segment of the name percent-encoded. */
export function artifactUrl(runId: string, name: string, route: ArtifactRoute): string {
  const path = name.split("/").map(encodeURIComponent).join("/");
  return `/api/runs/${encodeURIComponent(runId)}/${route === "download" ? "artifacts" : "artifact-images"}/${path}`;
}

/**
 * Whether a request path is under /api/runs/, where the artifact routes are (proxy.ts gives them
 * HOSTILE_CONTENT_CSP instead of the console's policy); decoded and case-blind, so no spelling of
 * the path gets the console's policy on artifact bytes.
 */
export function isArtifactPath(pathname: string): boolean {
  let path = pathname;
  try {
    path = decodeURIComponent(pathname);
  } catch {
    // a malformed escape: judged as sent
  }
  return /^\/+api\/+runs\//i.test(path);
}
