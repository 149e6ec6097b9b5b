import type { Scope } from "@/lib/contracts/scopes";

/** The console's sections and the scope each needs; the pages enforce the same scopes server-side. */
export const NAV_ITEMS = [
  { href: "/", label: "Dashboard", scope: "dashboard:read" },
  { href: "/queue", label: "Queue", scope: "runs:review" },
  { href: "/runs", label: "Runs", scope: "runs:read" },
  { href: "/patterns", label: "Patterns", scope: "patterns:read" },
  { href: "/skills", label: "Skills", scope: "skills:read" },
  { href: "/audit", label: "Audit", scope: "audit:read" },
  { href: "/policies", label: "Policies", scope: "policies:read" },
  { href: "/agents", label: "Agents", scope: "agents:manage" },
  { href: "/tools", label: "Tools", scope: "tools:read" },
] as const satisfies readonly { href: string; label: string; scope: Scope }[];
