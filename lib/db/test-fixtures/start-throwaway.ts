// Test fixture for postgres-server.test.ts: starts a throwaway server, prints where it lives and
// then waits to be killed without ever calling stop().
import { startPostgres } from "@/lib/db/postgres-server";

const server = await startPostgres({ persistent: false });
console.log(JSON.stringify({ dataDir: server.dataDir, pid: server.pid }));
setInterval(() => {}, 60_000);
