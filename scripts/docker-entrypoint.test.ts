/**
 * What the container runs, run outside it (Docker cannot run here): the real
 * scripts/docker-entrypoint.sh, the real scripts/postgres-init.sh, the real CLI, doctor, worker
 * and `next start`, against this run's test PostgreSQL. When the test runs as root (CI does), the
 * entrypoint runs as the image's user (uid 10001, through setpriv), so the sandbox probe and the
 * worker's strict sandbox are proven to work without root, as in the image.
 *
 * Proves:
 *  - it refuses, before starting anything: a missing or unknown argument (usage, exit 2), no
 *    DATABASE_URL, `web` without AUTH_SECRET;
 *  - an unreachable database: exit 1 after DATABASE_WAIT_SECONDS, naming host and port, never the
 *    password, and nothing else runs;
 *  - a superuser app role (this test server's admin URL): the doctor's FAIL is printed and the
 *    entrypoint exits 1 without starting the worker;
 *  - with the roles the compose file's init script creates (owner and app role, neither a
 *    superuser): `migrate` applies every migration as the owner; `worker` passes the doctor, runs
 *    at strict as a non-root user, holds no owner credentials even when given them, and drains
 *    on SIGTERM (so it was exec'd: the signal reached the worker itself); `web` passes the doctor
 *    and execs `next start` on the given host and port (which serves /api/health when this
 *    checkout has a build, and otherwise says it has none).
 * And the deployment files agree with each other and with lib/env.ts: the compose environments
 * and the Dockerfile's ENV parse, the audit key and checkpoints are on the audit volume, outside
 * the data directory and apart from the database's volume, the role names match the init script,
 * only `migrate` holds the owner's URL, the image's user is not root, there are two workers.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chownSync, existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, dirname, isAbsolute, join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { childProcessEnv, parseEnv } from "@/lib/env";
import { userOf } from "@/lib/db/roles";
import { withAdminClient, withDatabase } from "@/lib/testing/database-url";
import { createTestDatabase, type TestDatabase } from "@/lib/testing/db";

const root = join(import.meta.dirname, "..");
const ENTRYPOINT = join(root, "scripts", "docker-entrypoint.sh");
const ROLES_SCRIPT = join(root, "scripts", "postgres-init.sh");
/** The image's user (Dockerfile). */
const IMAGE_UID = 10001;

/** A client tool on PATH, or in Debian's PostgreSQL server directories. */
function findTool(name: string): string | null {
  const dirs = (childProcessEnv().PATH ?? "").split(delimiter).filter(Boolean);
  const pg = "/usr/lib/postgresql";
  if (existsSync(pg)) dirs.push(...readdirSync(pg).map((version) => join(pg, version, "bin")));
  return dirs.map((dir) => join(dir, name)).find((path) => existsSync(path)) ?? null;
}

const pgIsready = findTool("pg_isready");
const psql = findTool("psql");
const setpriv = findTool("setpriv");
const asImageUser = process.getuid?.() === 0 && setpriv !== null;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

type Dirs = { home: string; data: string; audit: string };

/** A home, data directory and audit directory the entrypoint's user may write. */
async function makeDirs(): Promise<Dirs> {
  const home = await mkdtemp(join(tmpdir(), "airlock-entrypoint-"));
  const dirs = { home, data: join(home, "data"), audit: join(home, "audit") };
  if (asImageUser) chownSync(home, IMAGE_UID, IMAGE_UID);
  return dirs;
}

/** The environment the image gives its processes (Dockerfile ENV), on this machine's paths. */
function imageEnv(dirs: Dirs, extra: Record<string, string>): NodeJS.ProcessEnv {
  return {
    PATH: [dirname(pgIsready ?? "/usr/bin/pg_isready"), childProcessEnv().PATH].join(delimiter),
    HOME: dirs.home,
    NODE_ENV: "production",
    NEXT_TELEMETRY_DISABLED: "1",
    AIRLOCK_HOST: "127.0.0.1",
    AIRLOCK_DATA_DIR: dirs.data,
    AIRLOCK_AUDIT_KEY_FILE: join(dirs.audit, "audit-signing-key.pem"),
    AIRLOCK_AUDIT_CHECKPOINT_DIR: join(dirs.audit, "checkpoints"),
    DATABASE_WAIT_SECONDS: "10",
    ...extra,
  };
}

type Entrypoint = {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
  /** Resolves once stdout matches, or rejects with the output when the process exits first. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
};

function startEntrypoint(args: string[], env: NodeJS.ProcessEnv, cwd: string): Entrypoint {
  const [file, argv] = asImageUser
    ? [setpriv!, [`--reuid=${IMAGE_UID}`, `--regid=${IMAGE_UID}`, "--clear-groups", "--", "sh", ENTRYPOINT, ...args]]
    : ["sh", [ENTRYPOINT, ...args]];
  const child = spawn(file, argv, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitFor: (pattern, timeoutMs = 90_000) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`timed out waiting for ${pattern}\n--- stdout\n${out}\n--- stderr\n${err}`)), timeoutMs);
        const check = () => {
          if (!pattern.test(out)) return;
          clearTimeout(timer);
          child.stdout!.off("data", check);
          resolve();
        };
        child.stdout!.on("data", check);
        void exited.then((code) => {
          clearTimeout(timer);
          if (pattern.test(out)) resolve();
          else reject(new Error(`exited (${code}) before ${pattern}\n--- stdout\n${out}\n--- stderr\n${err}`));
        });
        check();
      }),
  };
}

/** Runs the entrypoint to its end. */
async function runEntrypoint(args: string[], env: NodeJS.ProcessEnv, cwd: string) {
  const started = startEntrypoint(args, env, cwd);
  const code = await started.exited;
  return { code, stdout: started.stdout(), stderr: started.stderr() };
}

/** The uid and environment of a running process (Linux /proc). */
function processFacts(pid: number): { uid: number; env: string[] } {
  const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]);
  return { uid, env: readFileSync(`/proc/${pid}/environ`, "utf8").split("\0") };
}

describe.skipIf(!pgIsready || !psql)("scripts/docker-entrypoint.sh (needs pg_isready and psql: apt-get install -y postgresql-client)", () => {
  let dirs: Dirs;
  beforeAll(async () => {
    dirs = await makeDirs();
  });
  afterAll(() => (dirs ? rm(dirs.home, { recursive: true, force: true }) : undefined));

  it("refuses a missing or unknown argument, no DATABASE_URL, and web without AUTH_SECRET, before anything runs", async () => {
    const env = imageEnv(dirs, {});
    expect(await runEntrypoint([], env, dirs.home)).toMatchObject({ code: 2, stderr: "usage: docker-entrypoint.sh web|worker|migrate\n" });
    expect(await runEntrypoint(["shell"], env, dirs.home)).toMatchObject({ code: 2, stderr: "usage: docker-entrypoint.sh web|worker|migrate\n" });
    expect(await runEntrypoint(["worker"], env, dirs.home)).toEqual({
      code: 1,
      stdout: "",
      stderr: "airlock-entrypoint: DATABASE_URL is not set: this image runs against an external PostgreSQL and never starts its own (docs/deploy.md).\n",
    });
    const web = await runEntrypoint(["web"], { ...env, DATABASE_URL: "postgres://airlock_app:pw@127.0.0.1:1/airlock" }, dirs.home);
    expect(web).toMatchObject({ code: 1, stdout: "" });
    expect(web.stderr).toMatch(/^airlock-entrypoint: AUTH_SECRET is not set: /);
  });

  it("exits 1 when the database does not answer within DATABASE_WAIT_SECONDS, naming host and port but not the password", async () => {
    const port = await freePort(); // nothing listens there
    const env = imageEnv(dirs, { DATABASE_URL: `postgres://airlock_app:s3cret-never-printed@127.0.0.1:${port}/airlock`, DATABASE_WAIT_SECONDS: "2" });
    const startedAt = Date.now();
    const { code, stdout, stderr } = await runEntrypoint(["worker"], env, dirs.home);
    const elapsed = Date.now() - startedAt;
    expect(code).toBe(1);
    expect(stderr).toBe(
      `airlock-entrypoint: the database did not accept connections within 2 s (127.0.0.1:${port} - no response); check DATABASE_URL and that PostgreSQL is running and reachable from here.\n`,
    );
    expect(stdout).toBe(""); // no migration, no doctor, no worker
    expect(elapsed).toBeGreaterThanOrEqual(2_000);
    expect(elapsed).toBeLessThan(15_000);
  });

  describe("with a superuser as the app role", () => {
    let db: TestDatabase;
    beforeAll(async () => {
      db = await createTestDatabase();
    });
    afterAll(() => db?.drop());

    it("prints the doctor's FAIL and does not start the worker", async () => {
      const { code, stdout, stderr } = await runEntrypoint(["worker"], imageEnv(dirs, { DATABASE_URL: db.url }), dirs.home);
      expect(code).toBe(1);
      expect(stdout).toMatch(/^FAIL {2}database role: the app connects to PostgreSQL as "[^"]+", which is a superuser/m);
      expect(stderr).toContain("airlock-entrypoint: airlock doctor failed (above); not starting the worker.");
      expect(stdout).not.toContain("starting a worker");
      expect(stdout).not.toMatch(/airlock worker .* ready/);
    }, 120_000);
  });

  describe("with the roles of compose.yaml's init script", () => {
    const { adminUrl, databasePrefix } = inject("airlockDatabase");
    const suffix = randomBytes(4).toString("hex");
    const names = { owner: `airlock_owner_${suffix}`, app: `airlock_app_${suffix}`, database: `${databasePrefix}deploy_${suffix}` };
    const passwords = { owner: randomBytes(12).toString("hex"), app: randomBytes(12).toString("hex") };
    const urlAs = (user: string, password: string) => {
      const url = new URL(withDatabase(adminUrl, names.database));
      url.username = user;
      url.password = password;
      return url.toString();
    };
    const appUrl = urlAs(names.app, passwords.app);
    const ownerUrl = urlAs(names.owner, passwords.owner);

    beforeAll(() => {
      const admin = new URL(adminUrl);
      const result = spawnSync("sh", [ROLES_SCRIPT], {
        env: {
          PATH: [dirname(psql!), childProcessEnv().PATH].join(delimiter),
          NODE_ENV: "production", // required by Next's ProcessEnv type; psql ignores it
          PGHOST: admin.hostname,
          PGPORT: admin.port,
          PGPASSWORD: decodeURIComponent(admin.password),
          POSTGRES_USER: decodeURIComponent(admin.username),
          POSTGRES_DB: admin.pathname.slice(1),
          DB_OWNER: names.owner,
          DB_APP: names.app,
          DB_NAME: names.database,
          DB_OWNER_PASSWORD: passwords.owner,
          DB_APP_PASSWORD: passwords.app,
        },
        encoding: "utf8",
      });
      expect(result.stderr).toBe("");
      expect(result.status).toBe(0);
    });
    afterAll(async () => {
      await withAdminClient(adminUrl, async (client) => {
        await client.query(`DROP DATABASE IF EXISTS "${names.database}" WITH (FORCE)`);
        await client.query(`DROP ROLE IF EXISTS "${names.app}"`);
        await client.query(`DROP ROLE IF EXISTS "${names.owner}"`);
      });
    });

    it("creates an owner and an app role that are not superusers, and a database only the owner may connect to yet", async () => {
      const roles = await withAdminClient(adminUrl, (client) =>
        client.query<{ rolname: string; rolsuper: boolean; rolcreaterole: boolean; rolcreatedb: boolean; rolbypassrls: boolean }>(
          "SELECT rolname, rolsuper, rolcreaterole, rolcreatedb, rolbypassrls FROM pg_roles WHERE rolname = ANY($1) ORDER BY rolname",
          [[names.owner, names.app]],
        ),
      );
      expect(roles.rows).toEqual(
        [names.app, names.owner].sort().map((rolname) => ({ rolname, rolsuper: false, rolcreaterole: false, rolcreatedb: false, rolbypassrls: false })),
      );
      const owner = await withAdminClient(adminUrl, (client) =>
        client.query<{ owner: string; app_connect: boolean }>(
          "SELECT pg_get_userbyid(datdba) AS owner, has_database_privilege($2, datname, 'CONNECT') AS app_connect FROM pg_database WHERE datname = $1",
          [names.database, names.app],
        ),
      );
      expect(owner.rows).toEqual([{ owner: names.owner, app_connect: false }]);
    });

    it("migrate: applies every migration as the owner, grants the app role, and exits 0", async () => {
      const { code, stdout, stderr } = await runEntrypoint(
        ["migrate"],
        imageEnv(dirs, { DATABASE_URL: appUrl, AIRLOCK_MIGRATION_DATABASE_URL: ownerUrl }),
        dirs.home,
      );
      expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
      expect(stdout).toContain("airlock-entrypoint: applying migrations as the schema owner (AIRLOCK_MIGRATION_DATABASE_URL)…");
      expect(stdout).toMatch(/^Applied migrations: 20261130050608_init, /m);
      expect(stdout).not.toContain("airlock doctor"); // the one-shot migration checks nothing else
    }, 120_000);

    it("worker: passes the doctor, runs at strict without root and without the owner's URL, and drains on SIGTERM", async () => {
      // Given the owner's URL as a single container would be: it migrates (nothing left) and drops it.
      const worker = startEntrypoint(["worker"], imageEnv(dirs, { DATABASE_URL: appUrl, AIRLOCK_MIGRATION_DATABASE_URL: ownerUrl }), dirs.home);
      try {
        await worker.waitFor(/^airlock worker \S+ ready \(isolation strict, \d+ at a time\)$/m);
        const out = worker.stdout();
        expect(out).toContain("Database is up to date.");
        for (const check of ["sandbox", "database role", "audit keys", "clock", "migrations"]) expect(out).toMatch(new RegExp(`^OK {4}${check}: `, "m"));
        expect(out).not.toMatch(/^FAIL/m);
        expect(out).toMatch(/^Sandbox isolation: strict \(bubblewrap, Node permission model, prlimit\)\.$/m);
        // exec: the entrypoint's process is now the worker itself.
        const facts = processFacts(worker.child.pid!);
        expect(facts.env).toContain(`DATABASE_URL=${appUrl}`);
        expect(facts.env.filter((entry) => entry.startsWith("AIRLOCK_MIGRATION_DATABASE_URL="))).toEqual([]);
        if (asImageUser) expect(facts.uid).toBe(IMAGE_UID);
        else expect(facts.uid).not.toBe(0);
      } finally {
        worker.child.kill("SIGTERM");
      }
      expect(await worker.exited).toBe(0);
      expect(worker.stdout()).toMatch(/airlock worker: draining…\nairlock worker: stopped\n$/);
    }, 120_000);

    it("web: passes the doctor and execs next start on AIRLOCK_HOST and PORT", async () => {
      const port = await freePort();
      const env = imageEnv(dirs, {
        DATABASE_URL: appUrl,
        AUTH_SECRET: randomBytes(24).toString("hex"),
        PORT: String(port),
        AIRLOCK_IN_PROCESS_WORKER: "false",
      });
      const web = startEntrypoint(["web"], env, dirs.home);
      try {
        await web.waitFor(new RegExp(`Local: +http://127\\.0\\.0\\.1:${port}`));
        expect(web.stdout()).toContain(`airlock-entrypoint: starting the web process on 127.0.0.1:${port}.`);
        expect(web.stdout()).not.toMatch(/^FAIL/m);
        let exited = false;
        void web.exited.then(() => (exited = true));
        let health: { status: string; database: string } | null = null;
        for (const deadline = Date.now() + 60_000; !exited && health === null && Date.now() < deadline;) {
          const response = await fetch(`http://127.0.0.1:${port}/api/health`).catch(() => null);
          if (response?.status === 200) health = (await response.json()) as { status: string; database: string };
          else await new Promise((resolve) => setTimeout(resolve, 500));
        }
        if (health === null) {
          // This checkout has no production build (`npm run build`): next start says so and exits.
          expect(exited, "next start neither served /api/health within 60 s nor exited").toBe(true);
          expect(await web.exited).not.toBe(0);
          expect(web.stderr()).toContain("Could not find a production build in the '.next' directory");
        } else {
          expect(health).toMatchObject({ status: "ok", database: "ok" });
          expect(processFacts(web.child.pid!).env).toContain("NEXT_MANUAL_SIG_HANDLE=true");
          web.child.kill("SIGTERM");
          expect(await web.exited).toBe(0); // lib/runs/boot.ts drained and exited: the signal reached next itself
        }
      } finally {
        web.child.kill("SIGTERM");
        await web.exited;
      }
    }, 120_000);
  });
});

describe("the deployment files", () => {
  const compose = parseYaml(readFileSync(join(root, "compose.yaml"), "utf8"), { merge: true }) as {
    services: Record<
      string,
      { environment?: Record<string, string>; volumes?: string[]; deploy?: { replicas?: number }; security_opt?: string[]; command?: string[] }
    >;
  };
  const dockerfile = readFileSync(join(root, "Dockerfile"), "utf8").replace(/\\\n/g, " ");
  const runtimeStage = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "));
  /** Compose's ${VAR}, ${VAR:-default} and ${VAR:?message}, with the values an operator would give. */
  const given: Record<string, string> = {
    DB_APP_PASSWORD: "app-password",
    DB_OWNER_PASSWORD: "owner-password",
    POSTGRES_PASSWORD: "superuser-password",
    AUTH_SECRET: "x".repeat(40),
  };
  const interpolate = (value: string) =>
    String(value).replace(/\$\{(\w+)(?::([-?])([^}]*))?\}/g, (_, name: string, kind?: string, fallback?: string) => {
      if (given[name] !== undefined) return given[name];
      if (kind === "-") return fallback ?? "";
      throw new Error(`compose.yaml needs ${name}`);
    });
  const environmentOf = (service: string) =>
    Object.fromEntries(Object.entries(compose.services[service]?.environment ?? {}).map(([k, v]) => [k, interpolate(v)]));
  const dockerfileEnv = Object.fromEntries(
    [...runtimeStage.matchAll(/^ENV (.*)$/gm)].flatMap((line) => [...line[1]!.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1]!, m[2]!])),
  );
  const appServices = Object.keys(compose.services).filter((name) => name !== "db");
  const inside = (dir: string, path: string) => {
    const rel = relative(dir, path);
    return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
  };

  it("gives every Airlock service an environment lib/env.ts accepts, on top of the image's", () => {
    expect(appServices.sort()).toEqual(["migrate", "web", "worker"]);
    for (const service of appServices) {
      expect(() => parseEnv({ ...dockerfileEnv, ...environmentOf(service) }), service).not.toThrow();
    }
  });

  it("keeps the audit key and checkpoints on the audit volume, outside the data directory and off the database's volume", () => {
    const config = parseEnv(dockerfileEnv);
    const keyFile = config.AIRLOCK_AUDIT_KEY_FILE!;
    const checkpoints = config.AIRLOCK_AUDIT_CHECKPOINT_DIR!;
    expect([keyFile, checkpoints].some((path) => inside(config.AIRLOCK_DATA_DIR, path))).toBe(false);
    const mount = (service: string, volume: string) => compose.services[service]?.volumes?.find((v) => v.startsWith(`${volume}:`))?.split(":")[1];
    for (const service of ["web", "worker"]) {
      const auditMount = mount(service, "audit");
      expect(auditMount, service).toBeDefined();
      expect(inside(auditMount!, keyFile) && inside(auditMount!, checkpoints), service).toBe(true);
      expect(mount(service, "pgdata"), service).toBeUndefined();
    }
    expect(mount("db", "pgdata")).toBe("/var/lib/postgresql/data");
    expect(mount("db", "audit")).toBeUndefined();
  });

  it("connects as the init script's app role, and gives the owner's URL to migrate alone", () => {
    const roles = readFileSync(ROLES_SCRIPT, "utf8");
    const defaultOf = (name: string) => new RegExp(`\\$\\{${name}:-(\\w+)\\}`).exec(roles)?.[1];
    for (const service of appServices) {
      const url = new URL(environmentOf(service).DATABASE_URL!);
      expect([decodeURIComponent(url.username), url.pathname.slice(1)], service).toEqual([defaultOf("DB_APP"), defaultOf("DB_NAME")]);
      expect(url.password).toBe(given.DB_APP_PASSWORD);
    }
    expect(appServices.filter((service) => environmentOf(service).AIRLOCK_MIGRATION_DATABASE_URL)).toEqual(["migrate"]);
    expect(userOf(environmentOf("migrate").AIRLOCK_MIGRATION_DATABASE_URL!)).toBe(defaultOf("DB_OWNER"));
  });

  it("runs two workers, and gives the sandbox's containers the security settings bubblewrap needs", () => {
    expect(compose.services.worker?.command).toEqual(["worker"]);
    expect(compose.services.worker?.deploy?.replicas).toBe(2);
    expect(compose.services.worker?.security_opt).toEqual(expect.arrayContaining(["seccomp=unconfined", "apparmor=unconfined"]));
    // The web process executes nothing (and its doctor does not probe a sandbox): Docker's default profiles stay.
    expect(environmentOf("web").AIRLOCK_IN_PROCESS_WORKER).toBe("false");
    expect(compose.services.web?.security_opt).toEqual(["no-new-privileges:true"]);
  });

  it("runs the image as a user that is not root, through tini and the entrypoint, with the tools the entrypoint calls", () => {
    const user = [...runtimeStage.matchAll(/^USER (\S+)$/gm)].at(-1)?.[1];
    expect(user).toBeDefined();
    expect(user!.split(":")[0]).not.toMatch(/^(root|0)$/);
    expect(runtimeStage).toMatch(/^ENTRYPOINT \["\/usr\/bin\/tini", "--", "\/bin\/sh", "\/app\/scripts\/docker-entrypoint\.sh"\]$/m);
    const installed = /apt-get install[^&]*/.exec(runtimeStage)?.[0] ?? "";
    for (const pkg of ["bubblewrap", "postgresql-client", "tini"]) expect(installed, pkg).toMatch(new RegExp(`\\b${pkg}\\b`));
    expect(readFileSync(ENTRYPOINT, "utf8")).toMatch(/\bpg_isready\b/);
  });
});
