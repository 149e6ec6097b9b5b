/**
 * The sandbox bootstrap: the first and only module Node loads inside a sandbox.
 *
 * It runs INSIDE the hostile process, so it enforces nothing the host relies on. Its jobs are
 * convenience and fail-closed start-up:
 *  - refuse to run unless the permission model is on and every `--allow-*` flag of the pinned Node
 *    is out of effect (child processes, workers, addons, WASI, inspector, network, FFI, OpenSSL
 *    STORE loaders, a virtual file system; reads and writes beyond the sandbox's own paths), and
 *    refuse a permission flag it does not know (a launcher bug must not yield an unconfined run);
 *  - announce `ready`, wait for exactly one `job` frame, import the script module and call its
 *    default export with frozen `tools` stubs, an `inputs` reader and `checks` (each check's label
 *    and arguments go to the host, which decides it; the promise it returns is the host's verdict);
 *  - turn console output, tool calls and the final result into newline-delimited JSON frames on
 *    fd 1. It captures the functions it needs before the script loads, so a script that patches
 *    JSON, Promise, console or fs only breaks itself; the host validates every frame anyway.
 * Plain JavaScript on purpose: nothing is compiled inside the sandbox.
 */
import { writeSync, readFileSync, readdirSync, lstatSync, mkdirSync } from "node:fs";
import { registerHooks } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { format } from "node:util";

const stringify = JSON.stringify;
const parse = JSON.parse;
const exit = process.reallyExit.bind(process);
const PromiseCtor = Promise;
const MapCtor = Map;
const mapGet = Map.prototype.get;
const mapSet = Map.prototype.set;
const mapDelete = Map.prototype.delete;
const call = Function.prototype.call.bind(Function.prototype.call);
const freeze = Object.freeze;

function send(frame) {
  const line = stringify(frame) + "\n";
  let offset = 0;
  const bytes = Buffer.from(line, "utf8");
  while (offset < bytes.length) {
    try {
      offset += writeSync(1, bytes, offset);
    } catch (error) {
      if (error && error.code === "EAGAIN") continue;
      exit(70);
    }
  }
}

function fail(code, message) {
  send({ t: "done", ok: false, error: { name: "SandboxError", code, message } });
  exit(71);
}

// 1. Refuse to run unconfined. One check per `--allow-*` flag of the pinned Node (a test derives
// the flags from `node --help` and fails on one missing here). `has` on a scope name Node does not
// know answers false, so each check names a real scope or looks at the flag itself.
const permission = process.permission;
if (!permission || typeof permission.has !== "function") fail("NO_PERMISSION_MODEL", "process.permission is missing");
const granted = (scope, path) => {
  try {
    return path === undefined ? permission.has(scope) : permission.has(scope, path);
  } catch {
    return true;
  }
};
const ALLOW_FLAGS = {
  "--allow-addons": () => granted("addon"),
  "--allow-child-process": () => granted("child"),
  "--allow-ffi": () => granted("ffi"),
  "--allow-fs-read": () => granted("fs.read", "/") || granted("fs.read", "/etc/passwd"),
  "--allow-fs-vfs": () => process.execArgv.some((arg) => arg.startsWith("--allow-fs-vfs")),
  "--allow-fs-write": () => granted("fs.write", "/"),
  "--allow-inspector": () => granted("inspector"),
  "--allow-net": () => granted("net"),
  "--allow-openssl-store": () => granted("openssl.store"),
  "--allow-wasi": () => granted("wasi"),
  "--allow-worker": () => granted("worker"),
};
for (const [flag, inEffect] of Object.entries(ALLOW_FLAGS)) {
  if (inEffect()) fail("PERMISSION_TOO_WIDE", `${flag} is in effect`);
}
for (const arg of process.execArgv) {
  const flag = /^--allow-[a-z-]+/.exec(arg)?.[0];
  if (flag !== undefined && !Object.hasOwn(ALLOW_FLAGS, flag)) fail("PERMISSION_TOO_WIDE", `${flag} is not a flag this bootstrap checks`);
}
// Experimental modules the sandbox is started without (--no-experimental-ffi; no --experimental-vfs).
for (const id of ["node:ffi", "node:vfs"]) {
  if (process.getBuiltinModule(id) !== undefined) fail("PERMISSION_TOO_WIDE", `${id} can be loaded`);
}

// bwrap sets PWD after --chdir; the environment is otherwise empty (spawned with env {}, --clearenv).
delete process.env.PWD;

// 2. Frames from the host.
const pending = new MapCtor();
let job = null;
let buffered = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buffered += chunk;
  let nl;
  while ((nl = buffered.indexOf("\n")) >= 0) {
    const line = buffered.slice(0, nl);
    buffered = buffered.slice(nl + 1);
    onHostFrame(parse(line));
  }
});

function onHostFrame(frame) {
  if (frame.t === "job" && job === null) {
    job = frame;
    startJob(frame);
  } else if (frame.t === "result") {
    const waiter = call(mapGet, pending, frame.id);
    if (!waiter) return;
    call(mapDelete, pending, frame.id);
    if (frame.ok) waiter.resolve(frame.value);
    else waiter.reject(new ToolError(frame.error));
  } else if (frame.t === "checked") {
    const waiter = call(mapGet, pending, frame.id);
    if (!waiter) return;
    call(mapDelete, pending, frame.id);
    waiter.resolve(freeze({ ok: frame.ok === true, message: String(frame.message) }));
  }
}

class ToolError extends Error {
  constructor(message) {
    super(String(message));
    this.name = "ToolError";
  }
}

// 3. What the script sees.
let nextId = 1;
function makeTools(catalog) {
  const tools = Object.create(null);
  for (const server of Object.keys(catalog)) {
    const stubs = Object.create(null);
    for (const tool of catalog[server]) {
      stubs[tool] = function toolStub(args) {
        const id = nextId++;
        return new PromiseCtor((resolve, reject) => {
          call(mapSet, pending, id, { resolve, reject });
          send({ t: "call", id, server, tool, args: args === undefined ? {} : args });
        });
      };
      freeze(stubs[tool]);
    }
    tools[server] = freeze(stubs);
  }
  return freeze(tools);
}

// The host decides every check; these only carry the label and arguments there (arguments that are
// not JSON fail the check on the host) and hand back its verdict.
const CHECK_KINDS = ["equal", "rowCount", "sum", "range", "sameUnit"];
function makeChecks() {
  const checks = Object.create(null);
  for (const kind of CHECK_KINDS) {
    checks[kind] = function check(label, ...args) {
      const id = nextId++;
      let encoded;
      try {
        encoded = parse(stringify(args === undefined ? [] : args) ?? "[]");
      } catch {
        encoded = null;
      }
      return new PromiseCtor((resolve) => {
        call(mapSet, pending, id, { resolve, reject: resolve });
        send({ t: "check", id, kind, label: String(label).slice(0, 200), args: encoded });
      });
    };
    freeze(checks[kind]);
  }
  checks.assume = function assume(text) {
    send({ t: "assume", text: String(text).slice(0, 2000) });
  };
  checks.allowPartial = function allowPartial(reason) {
    send({ t: "partial", reason: String(reason).slice(0, 2000) });
  };
  freeze(checks.assume);
  freeze(checks.allowPartial);
  return freeze(checks);
}

// Sticky: each field is matched where the last one ended, so parsing is linear in the text.
const CSV_FIELD = /(?:"((?:[^"]|"")*)"|([^",\r\n]*))(,|\r?\n|$)/y;
/** Rows of fields: split on commas and line ends when no field can be quoted, else field by field. */
function csvRows(source) {
  // Without a quote or a lone CR, every comma and line end separates: the same rows, found faster.
  if (!/"|\r(?!\n)/.test(source)) {
    const lines = source.split(/\r?\n/);
    if (lines.at(-1) === "") lines.pop();
    const rows = lines.map((line) => line.split(","));
    // As field by field: a comma that ends the text ends the last row, with no empty field after it.
    if (source.endsWith(",")) rows.at(-1).pop();
    return rows;
  }
  const rows = [];
  let row = [];
  let at = 0;
  while (at < source.length) {
    CSV_FIELD.lastIndex = at;
    const m = CSV_FIELD.exec(source);
    if (!m || m[0].length === 0) throw new Error("malformed CSV");
    row.push(m[1] !== undefined ? m[1].replace(/""/g, '"') : m[2]);
    at += m[0].length;
    if (m[3] !== ",") {
      rows.push(row);
      row = [];
    }
  }
  if (row.length > 0) rows.push(row);
  return rows;
}

/** One object per row, keyed by the header; an empty line is no row. */
function parseCsv(text) {
  const rows = csvRows(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  const header = rows[0];
  if (!header) return [];
  // Assigned key by key, rows share one shape: about three times faster to build and to read
  // than Object.fromEntries. A `__proto__` column is defined as an own property instead, the way
  // fromEntries does (assigning it throws here: --disable-proto=throw).
  const assignable = !header.includes("__proto__");
  const records = [];
  for (let k = 1; k < rows.length; k++) {
    const row = rows[k];
    if (row.length === 1 && row[0] === "") continue;
    if (!assignable) {
      records.push(Object.fromEntries(header.map((h, i) => [h, row[i] ?? ""])));
      continue;
    }
    const record = {};
    for (let i = 0; i < header.length; i++) record[header[i]] = row[i] ?? "";
    records.push(record);
  }
  return records;
}

function makeInputs(dir, names) {
  const known = new Set(names);
  const pathOf = (name) => {
    if (!known.has(name)) {
      throw new Error(`no input named ${String(name).slice(0, 100)} was passed to this run: name it in submit_run's inputs (list_inputs lists them)`);
    }
    return join(dir, name);
  };
  return freeze({
    list: () => names.map((name) => ({ name, size: lstatSync(join(dir, name)).size })),
    text: (name) => readFileSync(pathOf(name), "utf8"),
    bytes: (name) => readFileSync(pathOf(name)),
    json: (name) => parse(readFileSync(pathOf(name), "utf8")),
    csv: (name) => parseCsv(readFileSync(pathOf(name), "utf8")),
  });
}

function captureConsole(maxChars) {
  for (const level of ["log", "info", "warn", "error", "debug", "trace", "dir", "table"]) {
    const kind = level === "warn" || level === "error" ? level : level === "debug" || level === "trace" ? "debug" : "log";
    console[level] = (...args) => {
      let text = format(...args);
      if (text.length > maxChars) text = text.slice(0, maxChars);
      send({ t: "log", level: kind, text });
    };
  }
}

// 4. Imports: the script may import allowlisted packages and a few harmless builtins. This is a
// convenience check with a clear message; the boundary is that nothing else is readable.
function installImportGate(scriptUrl, packages, builtins) {
  const deny = (specifier) => {
    send({ t: "deny", what: "import", detail: String(specifier).slice(0, 200) });
    const error = new Error(`import of '${String(specifier).slice(0, 200)}' is not allowed`);
    error.code = "ERR_IMPORT_NOT_ALLOWED";
    throw error;
  };
  closeEscapeHatches(deny);
  registerHooks({
    resolve(specifier, context, nextResolve) {
      if (context.parentURL !== scriptUrl) return nextResolve(specifier, context);
      const bare = specifier.startsWith("node:") ? specifier.slice(5) : specifier;
      if (builtins.includes(bare)) return nextResolve(`node:${bare}`, context);
      const name = bare.startsWith("@") ? bare.split("/").slice(0, 2).join("/") : bare.split("/")[0];
      const base = packages[name];
      if (base === undefined) return deny(specifier);
      return nextResolve(bare, { ...context, parentURL: base });
    },
  });
}

// 5. Escape hatches that need no import: builtins that could undo the flags above (vm compiles
// code from strings, v8 sets flags, module registers loader hooks and makes `require`, repl
// evaluates) and raw bindings/debug entry points. Everything else (net, child_process, ...) is
// left to the permission model and the OS layer, which the attack tests exercise directly.
const HIDDEN_BUILTINS = ["vm", "v8", "module", "repl"];
function closeEscapeHatches(deny) {
  const getBuiltinModule = process.getBuiltinModule.bind(process);
  process.getBuiltinModule = (id) => {
    const bare = String(id).startsWith("node:") ? String(id).slice(5) : String(id);
    if (HIDDEN_BUILTINS.includes(bare)) return deny(`node:${bare}`);
    return getBuiltinModule(id);
  };
  for (const name of ["binding", "_linkedBinding", "dlopen", "_debugProcess", "_debugEnd", "_startProfilerIdleNotifier", "reallyExit", "abort"]) {
    try {
      delete process[name];
    } catch {
      // non-configurable: leave it
    }
  }
}

// Files under out/, in walk order, up to the cap. The first file that crosses it is cut to the
// byte that crosses: the host counts the bytes it receives and fails the run on that count.
function collectArtifacts(outDir, cap) {
  const artifacts = [];
  let total = 0;
  const walk = (dir, prefix) => {
    for (const entry of readdirSync(dir)) {
      if (total > cap) return;
      const full = join(dir, entry);
      const rel = prefix ? `${prefix}/${entry}` : entry;
      const st = lstatSync(full);
      if (st.isDirectory()) walk(full, rel);
      else if (st.isFile()) {
        const data = readFileSync(full);
        const kept = total + data.length > cap ? data.subarray(0, cap - total + 1) : data;
        total += kept.length;
        artifacts.push({ name: rel, b64: kept.toString("base64") });
      }
    }
  };
  walk(outDir, "");
  return artifacts;
}

function describeError(error) {
  if (error !== null && typeof error === "object") {
    const stack = typeof error.stack === "string" ? error.stack : "";
    return {
      name: String(error.name ?? "Error").slice(0, 200),
      code: typeof error.code === "string" ? error.code.slice(0, 100) : undefined,
      message: String(error.message ?? "").slice(0, 8000),
      stack: stack.length > 4096 ? stack.slice(stack.length - 4096) : stack,
    };
  }
  return { name: "NonError", message: String(error).slice(0, 8000) };
}

let finished = false;
function finish(frame) {
  if (finished) return;
  finished = true;
  // No exit here: the host reads this process's CPU and memory from /proc, then kills it.
  send(frame);
}

process.on("uncaughtException", (error) => finish({ t: "done", ok: false, error: describeError(error) }));
process.on("unhandledRejection", (error) => finish({ t: "done", ok: false, error: describeError(error) }));

async function startJob(frame) {
  try {
    captureConsole(frame.maxLogChars);
    const scriptUrl = pathToFileURL(frame.script).href;
    installImportGate(scriptUrl, frame.packages, frame.builtins);
    mkdirSync(frame.outDir, { recursive: true });
    const tools = makeTools(frame.tools);
    const inputs = makeInputs(frame.inputsDir, frame.inputs);
    const mod = await import(scriptUrl);
    const value = await mod.default(tools, inputs, makeChecks());
    let result;
    try {
      result = value === undefined ? undefined : stringify(value);
    } catch (error) {
      throw new TypeError(`the returned value is not JSON-serializable: ${describeError(error).message}`);
    }
    finish({ t: "done", ok: true, result, artifacts: collectArtifacts(frame.outDir, frame.maxArtifactBytes) });
  } catch (error) {
    finish({ t: "done", ok: false, error: describeError(error) });
  }
}

send({ t: "ready" });
