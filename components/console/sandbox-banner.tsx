/** Shown on every console page while runs execute below strict isolation (lib/runs/isolation.ts `isolationNotice`). */
export function SandboxBanner({ notice }: { notice: string }) {
  return (
    <div
      role="alert"
      data-testid="sandbox-degraded"
      className="mb-6 rounded-md border border-amber-300 bg-amber-50 px-4 py-3 text-sm font-medium text-amber-900"
    >
      {notice}
    </div>
  );
}
