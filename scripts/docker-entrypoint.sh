#!/bin/sh
# The container's entrypoint (Dockerfile; docs/deploy.md): `web`, `worker` or `migrate`.
#
# Guarantees, in this order, each failure one line on stderr and exit 1 before anything starts:
#  1. DATABASE_URL is set (the image never starts an embedded PostgreSQL), and for `web` AUTH_SECRET
#     too (every web replica must sign sessions with the same secret; none is generated here);
#  2. DATABASE_URL's server accepts connections within DATABASE_WAIT_SECONDS (default 60; checked
#     with pg_isready, which names host and port, never the password);
#  3. with AIRLOCK_MIGRATION_DATABASE_URL: `airlock db migrate` as that owner (which also grants
#     DATABASE_URL's role exactly what the app needs, lib/db/roles.ts), after which the variable is
#     removed from the environment, so the process started below does not hold the owner's
#     credentials. `migrate` requires the variable and ends here;
#  4. `airlock doctor` passes: any FAIL (a superuser or owner app role, audit keys beside the
#     database, pending migrations, a sandbox this container cannot give, …) and nothing starts;
#  5. the process replaces this shell (exec), so it receives SIGTERM itself and drains:
#     `web` is `next start` on PORT and AIRLOCK_HOST with NEXT_MANUAL_SIG_HANDLE=true (lib/runs/boot.ts),
#     `worker` is scripts/worker.ts.
# Refuses: a missing or unknown argument (usage, exit 2). It re-implements nothing: migrating,
# checking and the processes are the CLI's (bin/airlock.mjs) and the scripts', run on the pinned
# Node 26 (node_modules/node) from the repository root.
set -eu

usage() {
  echo "usage: docker-entrypoint.sh web|worker|migrate" >&2
  exit 2
}
fail() {
  echo "airlock-entrypoint: $*" >&2
  exit 1
}
say() {
  echo "airlock-entrypoint: $*"
}

[ "$#" -eq 1 ] || usage
case "$1" in
  web | worker | migrate) command=$1 ;;
  *) usage ;;
esac

root=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)
cd "$root"
node="$root/node_modules/node/bin/node"
airlock() {
  "$node" "$root/bin/airlock.mjs" "$@"
}

[ -n "${DATABASE_URL:-}" ] || fail "DATABASE_URL is not set: this image runs against an external PostgreSQL and never starts its own (docs/deploy.md)."
if [ "$command" = web ] && [ -z "${AUTH_SECRET:-}" ]; then
  fail "AUTH_SECRET is not set: the web process needs the secret that signs session cookies, the same for every web replica (32 characters or more)."
fi
if [ "$command" = migrate ] && [ -z "${AIRLOCK_MIGRATION_DATABASE_URL:-}" ]; then
  fail "migrate needs AIRLOCK_MIGRATION_DATABASE_URL, the URL of the schema's owner (docs/deploy.md)."
fi

wait_seconds=${DATABASE_WAIT_SECONDS:-60}
case "$wait_seconds" in
  '' | *[!0-9]*) fail "DATABASE_WAIT_SECONDS must be a whole number of seconds, not \"$wait_seconds\"." ;;
esac
started=$(date +%s)
while :; do
  status=$(pg_isready -d "$DATABASE_URL" -t 2 2>&1) && break
  code=$?
  [ "$code" -ne 3 ] || fail "DATABASE_URL is not a connection string PostgreSQL's client accepts (pg_isready exit 3)."
  # Whole seconds: more than wait_seconds have passed only once the difference exceeds it.
  if [ "$(($(date +%s) - started))" -gt "$wait_seconds" ]; then
    fail "the database did not accept connections within ${wait_seconds} s (${status}); check DATABASE_URL and that PostgreSQL is running and reachable from here."
  fi
  sleep 1
done
say "database is up (${status})."

if [ -n "${AIRLOCK_MIGRATION_DATABASE_URL:-}" ]; then
  say "applying migrations as the schema owner (AIRLOCK_MIGRATION_DATABASE_URL)…"
  airlock db migrate || fail "the migration failed (above); nothing was started."
  unset AIRLOCK_MIGRATION_DATABASE_URL
fi
if [ "$command" = migrate ]; then
  exit 0
fi

say "checking this deployment (airlock doctor)…"
airlock doctor || fail "airlock doctor failed (above); not starting the $command. Fix what it names (docs/deploy.md)."

case "$command" in
  web)
    say "starting the web process on ${AIRLOCK_HOST:-127.0.0.1}:${PORT:-3000}."
    export NEXT_MANUAL_SIG_HANDLE=true
    # The same defaults as lib/env.ts; the doctor has validated both.
    exec "$node" --disable-sigusr1 "$root/node_modules/next/dist/bin/next" start -p "${PORT:-3000}" -H "${AIRLOCK_HOST:-127.0.0.1}"
    ;;
  worker)
    say "starting a worker."
    exec "$node" --conditions=react-server --disable-sigusr1 --import tsx "$root/scripts/worker.ts"
    ;;
esac
