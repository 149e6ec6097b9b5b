#!/bin/sh
# The two database roles Airlock runs with, for a new PostgreSQL server: compose.yaml mounts this
# into the official postgres image's /docker-entrypoint-initdb.d, which runs it once, as the
# superuser, when the data directory is first created (docs/deploy.md, "Roles and grants").
#
# Creates, from DB_OWNER / DB_APP / DB_NAME (defaults airlock_owner, airlock_app, airlock) and the
# passwords DB_OWNER_PASSWORD and DB_APP_PASSWORD (required):
#  - the owner: LOGIN, and nothing else (no superuser, CREATEDB, CREATEROLE, replication or
#    BYPASSRLS); it owns the database, so it can create the schema. Migrations run as it
#    (AIRLOCK_MIGRATION_DATABASE_URL), and each migration run grants the app role its privileges;
#  - the app role: LOGIN with the same attributes, owning nothing and a member of no role, what
#    DATABASE_URL logs in as (the migrate step sets its privileges to exactly those of
#    lib/db/roles.ts; `airlock doctor` FAILs an app role that could switch off the audit log's
#    append-only triggers);
#  - the database, owned by the owner, which only roles granted CONNECT may connect to (the
#    migrate step grants it to the app role).
# Refuses (psql stops at the first error): a missing password, a role or database that exists.
# Names and passwords reach PostgreSQL as psql variables, quoted by psql, never spliced into SQL.
set -eu

: "${DB_OWNER_PASSWORD:?set DB_OWNER_PASSWORD, the schema owner's password}"
: "${DB_APP_PASSWORD:?set DB_APP_PASSWORD, the app role's password}"

psql -v ON_ERROR_STOP=1 --no-psqlrc --username "${POSTGRES_USER:-postgres}" --dbname "${POSTGRES_DB:-postgres}" \
  -v owner="${DB_OWNER:-airlock_owner}" -v owner_password="$DB_OWNER_PASSWORD" \
  -v app="${DB_APP:-airlock_app}" -v app_password="$DB_APP_PASSWORD" \
  -v database="${DB_NAME:-airlock}" <<'SQL'
CREATE ROLE :"owner" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD :'owner_password';
CREATE ROLE :"app" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD :'app_password';
CREATE DATABASE :"database" OWNER :"owner";
REVOKE CONNECT ON DATABASE :"database" FROM PUBLIC;
SQL
