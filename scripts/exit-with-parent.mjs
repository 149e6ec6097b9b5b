/**
 * Preloaded (`--import`) into the web server `npm start` runs (scripts/start.ts): the server ends
 * when the start that ran it is gone. It runs in a process group of its own (so that a stop can
 * kill what it leaves behind), which a start killed outright (SIGKILL, a terminal closed under it)
 * does not take down: the server would go on serving and executing runs with nobody watching, and
 * the next start would find its port taken. Once its parent is gone it is stopped as a stop stops
 * it: SIGTERM (it drains its executor), and whatever its group still holds when it exits, or when
 * the drain's time is up, is killed.
 */
/** As long as scripts/start.ts gives a server to drain before it kills its group. */
const DRAIN_MS = 45_000;
const parent = process.ppid;

function killGroup() {
  try {
    process.kill(-process.pid, "SIGKILL");
  } catch {
    // Nothing left in the group, or not its leader.
  }
}

const watch = setInterval(() => {
  if (process.ppid === parent) return;
  clearInterval(watch);
  process.once("exit", killGroup);
  setTimeout(killGroup, DRAIN_MS + 5_000).unref();
  process.kill(process.pid, "SIGTERM");
}, 1_000);
watch.unref();
