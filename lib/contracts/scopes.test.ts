import { describe, expect, it } from "vitest";
import { AppError } from "@/lib/errors";
import { ROLE_SCOPES, ROLES, hasScope, requireScope, type Actor } from "./scopes";

const user = (role: (typeof ROLES)[number]): Actor => ({ type: "user", id: "u", email: "u@x", role });

describe("scopes", () => {
  it("keeps approving and auditing in different hands", () => {
    expect(hasScope(user("reviewer"), "runs:review")).toBe(true);
    expect(hasScope(user("compliance"), "runs:review")).toBe(false);
    expect(hasScope(user("admin"), "runs:review")).toBe(false);
    expect(hasScope(user("compliance"), "audit:read")).toBe(true);
    expect(hasScope(user("reviewer"), "audit:read")).toBe(false);
  });

  it("gives only admins the management scopes", () => {
    for (const role of ROLES) {
      expect(ROLE_SCOPES[role].includes("agents:manage" as never)).toBe(role === "admin");
    }
  });

  it("requireScope throws typed errors: unauthorized without an actor, forbidden without the scope", () => {
    expect(() => requireScope(null, "runs:read")).toThrowError(expect.objectContaining({ code: "unauthorized" }));
    try {
      requireScope(user("compliance"), "agents:manage");
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(AppError);
      expect((error as AppError).code).toBe("forbidden");
      expect((error as AppError).status).toBe(403);
    }
    expect(() => requireScope(user("admin"), "agents:manage")).not.toThrow();
  });

  it("limits an agent to the scopes on its token", () => {
    const agent: Actor = { type: "agent", id: "a", name: "bot", ownerId: "u", scopes: ["runs:read"] };
    expect(hasScope(agent, "runs:read")).toBe(true);
    expect(hasScope(agent, "runs:submit")).toBe(false);
  });
});
