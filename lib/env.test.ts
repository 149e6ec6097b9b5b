import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { ENV_KEYS, EnvError, parseEnv } from "./env";

function problems(source: Record<string, string>): string[] {
  try {
    parseEnv(source);
  } catch (error) {
    if (error instanceof EnvError) return error.problems;
    throw error;
  }
  return [];
}

describe("parseEnv", () => {
  it("gives sensible defaults for an empty environment", () => {
    const env = parseEnv({});
    expect(env.PORT).toBe(3000);
    expect(env.AIRLOCK_HOST).toBe("127.0.0.1");
    expect(env.AIRLOCK_DATA_DIR).toBe(".airlock");
    expect(env.DATABASE_URL).toBeUndefined();
  });

  it("treats empty strings as unset", () => {
    expect(parseEnv({ DATABASE_URL: "", AIRLOCK_DEMO_PASSWORD: "" }).DATABASE_URL).toBeUndefined();
  });

  it("names the variable and the fix for each bad value", () => {
    const found = problems({ PORT: "http", DATABASE_URL: "mysql://x", AUTH_SECRET: "short" });
    expect(found).toHaveLength(3);
    expect(found.find((p) => p.startsWith("PORT "))).toContain("fix it in the environment");
    expect(found.find((p) => p.startsWith("DATABASE_URL "))).toContain("postgres://");
    expect(found.find((p) => p.startsWith("AUTH_SECRET "))).toContain("32");
  });

  it("reads whole numbers only as decimal digits, and a public URL only as http(s)", () => {
    // 0x50 started the server on port 80, 1e3 on 1000; javascript: was printed as the console's address.
    for (const PORT of ["0x50", "1e3", "80.0", " 8080"]) expect(problems({ PORT })).toEqual([expect.stringMatching(/^PORT .*in digits/)]);
    expect(problems({ AIRLOCK_BUDGET_RUNS_PER_HOUR: "1e3" })).toEqual([expect.stringMatching(/^AIRLOCK_BUDGET_RUNS_PER_HOUR .*in digits/)]);
    for (const AIRLOCK_PUBLIC_URL of ["javascript:alert(1)//", "ftp://x"]) {
      expect(problems({ AIRLOCK_PUBLIC_URL })).toEqual([expect.stringMatching(/^AIRLOCK_PUBLIC_URL .*http:\/\/ or https:\/\//)]);
    }
    expect(parseEnv({ PORT: "8080", AIRLOCK_PUBLIC_URL: "https://airlock.example.com" })).toMatchObject({
      PORT: 8080,
      AIRLOCK_PUBLIC_URL: "https://airlock.example.com",
    });
  });

  it("refuses an unknown AIRLOCK_ variable instead of ignoring a typo", () => {
    expect(problems({ AIRLOCK_DATADIR: "/x" })).toEqual(["AIRLOCK_DATADIR is not a setting Airlock knows; remove it or check its spelling (see README)."]);
  });

  it("requires the OIDC settings together", () => {
    const found = problems({ AIRLOCK_OIDC_ISSUER: "https://id.example.com" });
    expect(found[0]).toContain("AIRLOCK_OIDC_CLIENT_ID");
    expect(() =>
      parseEnv({
        AIRLOCK_OIDC_ISSUER: "https://id.example.com",
        AIRLOCK_OIDC_CLIENT_ID: "airlock",
        AIRLOCK_OIDC_CLIENT_SECRET: "s3cret",
      }),
    ).not.toThrow();
  });

  it("rejects a demo password too short to be safe", () => {
    expect(problems({ AIRLOCK_DEMO_PASSWORD: "abc" })[0]).toMatch(/^AIRLOCK_DEMO_PASSWORD must be at least 12/);
  });

  it("documents every variable it reads in the README's table", () => {
    const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
    const undocumented = ENV_KEYS.filter((key) => !new RegExp(`^\\| \`${key}\` +\\|`, "m").test(readme));
    expect(undocumented).toEqual([]);
  });
});
