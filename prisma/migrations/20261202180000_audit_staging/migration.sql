-- Audit events are staged in the caller's transaction and chained in batches by one sequencer
-- (lib/audit/record.ts, lib/audit/sequencer.ts).
--
-- Before: every transaction that wrote an event held the chain's advisory lock from its append to
-- its commit, so appends were serialized end to end (~830 events/s with 4 writers). Now a
-- transaction inserts its events into "AuditPending" (no lock; the event commits or rolls back
-- with the change it records) and airlock_audit_sequence() moves committed pending events into
-- the chain, many per transaction, under the lock. The chain's order is the sequencer's order;
-- "AuditEvent" and its hash are unchanged, so verification, checkpoints and proofs are too.

-- 1. Staged events: what "AuditEvent" holds, without the chain, plus the canonical JSON the
--    chain hash is computed over (canonicalJson of at, actorType, actorId, action, subjectType,
--    subjectId, data: computed by the app, which owns canonical JSON). A canonical text that does
--    not match the fields is not trusted: verification recomputes every hash from the fields.
CREATE TABLE "AuditPending" (
    "id" BIGSERIAL NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,
    "actorType" TEXT NOT NULL,
    "actorId" TEXT,
    "action" TEXT NOT NULL,
    "subjectType" TEXT NOT NULL,
    "subjectId" TEXT,
    "data" JSONB NOT NULL DEFAULT '{}',
    "canonical" TEXT NOT NULL,

    CONSTRAINT "AuditPending_pkey" PRIMARY KEY ("id")
);

-- A staged event is never changed: it leaves only by being chained (below, as the owner).
CREATE FUNCTION "audit_pending_no_update"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'staged audit events are append-only: UPDATE on "AuditPending" is not allowed'
    USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER "AuditPending_no_update"
  BEFORE UPDATE ON "AuditPending"
  FOR EACH ROW EXECUTE FUNCTION "audit_pending_no_update"();

-- 2. The sequencer: chains up to p_max committed pending events in id order and deletes them from
--    "AuditPending", in one transaction under the chain's advisory lock (7231004417, the lock
--    recordAudit used to take). Runs as the owner of this schema (SECURITY DEFINER, fixed
--    search_path): the app role may INSERT staged events but neither delete nor change them, and
--    may no longer write "AuditEvent" itself. Returns how many it chained.
--    hash = sha256(prevHash || canonical), as chainHash in lib/audit/record.ts computes it.
CREATE FUNCTION "airlock_audit_sequence"(p_max integer) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
  prev text;
  next_hash text;
  staged record;
  chained bigint[] := ARRAY[]::bigint[];
BEGIN
  IF p_max IS NULL OR p_max < 1 OR p_max > 10000 THEN
    RAISE EXCEPTION 'airlock_audit_sequence: a batch is 1 to 10000 events (got %)', p_max USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM "AuditPending") THEN
    RETURN 0;
  END IF;
  PERFORM pg_advisory_xact_lock(7231004417);
  SELECT e."hash" INTO prev FROM "AuditEvent" e ORDER BY e."id" DESC LIMIT 1;
  prev := coalesce(prev, repeat('0', 64));
  FOR staged IN SELECT * FROM "AuditPending" p ORDER BY p."id" LIMIT p_max LOOP
    next_hash := encode(sha256(convert_to(prev || staged."canonical", 'UTF8')), 'hex');
    INSERT INTO "AuditEvent" ("at", "actorType", "actorId", "action", "subjectType", "subjectId", "data", "prevHash", "hash")
    VALUES (staged."at", staged."actorType", staged."actorId", staged."action", staged."subjectType", staged."subjectId", staged."data", prev, next_hash);
    prev := next_hash;
    chained := chained || staged."id";
  END LOOP;
  DELETE FROM "AuditPending" WHERE "id" = ANY (chained);
  RETURN cardinality(chained);
END;
$$;

-- 3. "An event of this transaction" (the purge and hold checks at commit) now finds it staged:
--    a transaction's own events are still in "AuditPending" when it commits.
CREATE OR REPLACE FUNCTION "airlock_event_in_this_transaction"(p_action text, p_subject text, p_key text, p_contains jsonb) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $$
  SELECT EXISTS (SELECT 1 FROM "AuditPending" e
                  WHERE e."action" = p_action AND e."subjectId" = p_subject
                    AND e.xmin = pg_current_xact_id()::xid AND e."data" -> p_key @> p_contains)
      OR EXISTS (SELECT 1 FROM "AuditEvent" e
                  WHERE e."action" = p_action AND e."subjectId" = p_subject
                    AND e.xmin = pg_current_xact_id()::xid AND e."data" -> p_key @> p_contains)
$$;
