/**
 * GET /api/audit/export?format=jsonl|csv[&rows=events|runs][&auditReads=include|exclude]&<search filters>
 * — streams the matching audit events, or one row per matching run (`rows=runs`), without the
 * log's own reads when `auditReads=exclude` (lib/audit/export.ts), to a signed-in user with
 * audit:export. The export is audited ("audit.exported") before the first byte is sent. The
 * manifest is the first JSONL line, and for both formats also the X-Airlock-Manifest header
 * (JSON, non-ASCII escaped).
 */
import { NextResponse } from "next/server";
import { EXPORT_FORMATS, EXPORT_ROWS, type ExportFormat, type ExportRows } from "@/lib/audit/export";
import { FILTER_KEYS, filtersFromSearchParams } from "@/lib/audit/filters";
import { exportAudited } from "@/lib/audit/service";
import { userRoute } from "@/lib/auth/user-route";
import { prisma } from "@/lib/db";
import { AppError } from "@/lib/errors";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const CONTENT_TYPE: Record<ExportFormat, string> = { jsonl: "application/x-ndjson; charset=utf-8", csv: "text/csv; charset=utf-8" };

const OWN = ["format", "rows", "auditReads"];

export const GET = userRoute(
  "audit:export",
  async (user, request) => {
    const format = request.nextUrl.searchParams.get("format") ?? "";
    if (!(EXPORT_FORMATS as readonly string[]).includes(format)) throw new AppError("bad_request", "format must be jsonl or csv");
    const params = request.nextUrl.searchParams;
    const kind = params.get("rows") ?? "events";
    if (!(EXPORT_ROWS as readonly string[]).includes(kind)) throw new AppError("bad_request", "rows must be events or runs");
    const auditReads = params.get("auditReads") ?? "include";
    if (auditReads !== "include" && auditReads !== "exclude") throw new AppError("bad_request", "auditReads must be include or exclude");
    if (kind === "runs" && auditReads === "exclude") throw new AppError("bad_request", "auditReads applies to event rows, not rows=runs");
    const parsed = filtersFromSearchParams(params, OWN);
    if (!parsed.ok) throw new AppError("bad_request", parsed.error);
    const { manifest, rows } = await exportAudited(prisma(), user, parsed.filters, format as ExportFormat, {
      rows: kind as ExportRows,
      excludeAuditReads: auditReads === "exclude",
    });
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const next = await rows.next();
          if (next.done) controller.close();
          else controller.enqueue(encoder.encode(next.value));
        } catch (error) {
          console.error("audit export failed while streaming", error);
          controller.error(error);
        }
      },
      async cancel() {
        await rows.return(undefined);
      },
    });
    const stamp = manifest.exportedAt.replace(/[-:]/g, "").slice(0, 15);
    return new NextResponse(body, {
      headers: {
        "content-type": CONTENT_TYPE[format as ExportFormat],
        "content-disposition": `attachment; filename="airlock-audit-${kind === "runs" ? "runs-" : ""}${stamp}.${format}"`,
        "cache-control": "no-store",
        "x-airlock-manifest": JSON.stringify(manifest).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`),
      },
    });
  },
  { query: [...OWN, ...FILTER_KEYS] },
);
