# syntax=docker/dockerfile:1
#
# Airlock's production image: one image for the web process, the workers and the one-shot
# migration (scripts/docker-entrypoint.sh `web` | `worker` | `migrate`; docs/deploy.md).
#
# Guarantees:
#  - two stages: `build` installs with `npm ci` (which also fetches the pinned Node 26, the `node`
#    package, and generates the Prisma client) and runs `npm run build`; `runtime` is Debian slim
#    with no compiler and no npm, only what the processes use at run time: the pinned Node 26
#    (node_modules/node, first on PATH), bubblewrap (the `strict` sandbox), prlimit (util-linux,
#    part of Debian's base) and ldd (libc-bin, also base: the sandbox binds the node binary's
#    libraries), libatomic1 (that binary links it), pg_isready (postgresql-client: the entrypoint
#    waits for the database) and tini (PID 1: forwards signals, reaps children);
#  - nothing runs as root: the processes run as `airlock` (uid 10001, no login shell); the
#    application's files belong to root and are read-only to it. It writes only to
#    /var/lib/airlock (AIRLOCK_DATA_DIR and HOME), /var/lib/airlock-audit (the audit signing key
#    and checkpoints: mount a volume there that is not the database's), /tmp and /app/.next/cache.
# Refuses: nothing here is a check; the entrypoint refuses to start what `airlock doctor` FAILs.
#
# The sandbox in a container. Runs are executed by bubblewrap as this non-root user, which needs
# the kernel's unprivileged user namespaces and, inside them, mount(2), pivot_root(2), chroot(2)
# and sethostname(2). Docker's defaults refuse them:
#  - the default seccomp profile allows clone(2) with a CLONE_NEW* flag, unshare(2), mount(2),
#    umount2(2) and sethostname(2) only to containers with CAP_SYS_ADMIN, and pivot_root(2) never;
#  - the default AppArmor profile (docker-default, where AppArmor is on) denies every mount.
# So run the containers that start a sandbox (workers, and a web process that executes runs) with
#   --security-opt seccomp=unconfined --security-opt apparmor=unconfined
# (or a custom seccomp profile allowing those calls, and a custom AppArmor profile allowing mount,
# pivot_root and userns: docs/deploy.md). No capability is needed: --cap-drop ALL and
# --security-opt no-new-privileges are fine (Debian's bwrap is not setuid, and a new user
# namespace gets its own capabilities). --cap-add SYS_ADMIN is neither needed nor enough
# (pivot_root stays refused), and --privileged is not needed. Ubuntu 23.10+ hosts also restrict
# unprivileged user namespaces (sysctl kernel.apparmor_restrict_unprivileged_userns=1): with
# apparmor=unconfined, bwrap then fails "setting up uid map: Permission denied" (docs/deploy.md).
# Without all this, `airlock doctor` FAILs its sandbox check and the entrypoint does not start,
# unless airlock.config.json says "sandbox": { "allowDegraded": true }: then runs execute at
# permission-only and the shipped policy denies every script that is not read-only.
#
# Not built here: this file was written on a machine where Docker cannot run. What the container
# runs (the entrypoint, the roles script, the worker, the doctor, bubblewrap as a non-root user)
# is tested outside it (scripts/docker-entrypoint.test.ts).

ARG NODE_IMAGE=node:24-bookworm-slim
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
ENV NEXT_TELEMETRY_DISABLED=1
# What `npm ci` and its postinstall (prisma generate) read, first, so the install is cached.
COPY package.json package-lock.json prisma.config.ts ./
COPY scripts/prisma-generate.mjs scripts/
COPY prisma prisma
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && mkdir -p .next/cache

FROM ${RUNTIME_IMAGE} AS runtime
RUN apt-get update \
  && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    bubblewrap ca-certificates libatomic1 postgresql-client tini \
  && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 airlock \
  && useradd --system --uid 10001 --gid airlock --home-dir /var/lib/airlock --shell /usr/sbin/nologin airlock \
  && install -d -o airlock -g airlock -m 0700 /var/lib/airlock /var/lib/airlock/data /var/lib/airlock-audit
WORKDIR /app
COPY --from=build /app /app
RUN chown airlock:airlock /app/.next/cache
ENV NODE_ENV=production \
  NEXT_TELEMETRY_DISABLED=1 \
  PATH=/app/node_modules/node/bin:$PATH \
  HOME=/var/lib/airlock \
  AIRLOCK_HOST=0.0.0.0 \
  PORT=3000 \
  AIRLOCK_DATA_DIR=/var/lib/airlock/data \
  AIRLOCK_AUDIT_KEY_FILE=/var/lib/airlock-audit/audit-signing-key.pem \
  AIRLOCK_AUDIT_CHECKPOINT_DIR=/var/lib/airlock-audit/checkpoints
USER airlock:airlock
EXPOSE 3000
ENTRYPOINT ["/usr/bin/tini", "--", "/bin/sh", "/app/scripts/docker-entrypoint.sh"]
CMD ["web"]
