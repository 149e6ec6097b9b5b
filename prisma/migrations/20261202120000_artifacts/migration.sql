-- Hand-written: artifacts (docs/audit.md, "Artifacts"). The files a run wrote under ./out/ are kept
-- by content: one "ArtifactBlob" per sha256 of the bytes, and one "RunArtifact" per file of a run
-- (its name, the blob's sha256, its size and the media type sniffed from its bytes). Both are
-- written in the transaction of the run's terminal write (lib/runs/artifacts.ts), whose audit
-- event digests `execution` and so the list of {name, sizeBytes, sha256, mediaType}: the list is
-- sealed in the chain, and the bytes are proven by their sha256.
CREATE TABLE "ArtifactBlob" (
    "sha256" TEXT NOT NULL,
    "sizeBytes" INTEGER NOT NULL,
    "bytes" BYTEA,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "purgedAt" TIMESTAMPTZ(3),

    CONSTRAINT "ArtifactBlob_pkey" PRIMARY KEY ("sha256")
);

CREATE TABLE "RunArtifact" (
    "runId" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "sha256" TEXT NOT NULL,
    "sizeBytes" INTEGER NOT NULL,
    "mediaType" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "RunArtifact_pkey" PRIMARY KEY ("runId","name")
);

CREATE INDEX "RunArtifact_sha256_idx" ON "RunArtifact"("sha256");

ALTER TABLE "RunArtifact" ADD CONSTRAINT "RunArtifact_runId_fkey" FOREIGN KEY ("runId") REFERENCES "Run"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "RunArtifact" ADD CONSTRAINT "RunArtifact_sha256_fkey" FOREIGN KEY ("sha256") REFERENCES "ArtifactBlob"("sha256") ON DELETE RESTRICT ON UPDATE CASCADE;

-- A blob is what its sha256 says, from its first write on; afterwards only two changes exist:
-- - retention: the bytes set to NULL with a "purgedAt" time, through the purge door
--   (airlock_purge_door_open(), migration 20261202100000_retention_purge_holds: only statements of
--   the SECURITY DEFINER airlock_purge() pass it);
-- - the same content written again by a later run after that purge: the bytes come back, proven
--   by their sha256, and "purgedAt" is cleared (anyone may, since the bytes are the ones sealed).
-- DELETE and TRUNCATE are refused.
CREATE FUNCTION "artifact_blob_guard"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NEW."bytes" IS NOT NULL AND NEW."purgedAt" IS NULL
       AND NEW."sha256" = encode(sha256(NEW."bytes"), 'hex')
       AND NEW."sizeBytes" = octet_length(NEW."bytes") THEN
      RETURN NEW;
    END IF;
    RAISE EXCEPTION 'ArtifactBlob %: a blob is inserted with its bytes, and they must match its sha256 and size', NEW."sha256"
      USING ERRCODE = 'check_violation';
  END IF;
  IF TG_OP = 'UPDATE' THEN
    IF NEW."sha256" = OLD."sha256" AND NEW."sizeBytes" = OLD."sizeBytes" AND NEW."createdAt" = OLD."createdAt" THEN
      IF OLD."bytes" IS NOT NULL AND NEW."bytes" IS NULL AND OLD."purgedAt" IS NULL AND NEW."purgedAt" IS NOT NULL
         AND "airlock_purge_door_open"() THEN
        RETURN NEW;
      END IF;
      IF OLD."bytes" IS NULL AND NEW."bytes" IS NOT NULL AND NEW."purgedAt" IS NULL
         AND encode(sha256(NEW."bytes"), 'hex') = NEW."sha256" THEN
        RETURN NEW;
      END IF;
    END IF;
  END IF;
  RAISE EXCEPTION 'ArtifactBlob is append-only: % on "ArtifactBlob" is not allowed (only retention purges its bytes, through airlock_purge())', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER "ArtifactBlob_guard"
  BEFORE INSERT OR UPDATE OR DELETE ON "ArtifactBlob"
  FOR EACH ROW EXECUTE FUNCTION "artifact_blob_guard"();

CREATE TRIGGER "ArtifactBlob_no_truncate"
  BEFORE TRUNCATE ON "ArtifactBlob"
  FOR EACH STATEMENT EXECUTE FUNCTION "artifact_blob_guard"();

-- A run's artifact is inserted once and never changes, and only as its run's sealed list says:
-- {name, sha256, sizeBytes, mediaType} must be an entry of "Run"."execution"->'artifacts' (written
-- just before, in the same terminal transaction, write-once and digested by the terminal event).
-- Checked once per statement, as one set difference, so a run's 4,096 files cost one pass, not 4,096.
CREATE FUNCTION "run_artifact_append_only"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'RunArtifact is append-only: % on "RunArtifact" is not allowed', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER "RunArtifact_append_only"
  BEFORE UPDATE OR DELETE ON "RunArtifact"
  FOR EACH ROW EXECUTE FUNCTION "run_artifact_append_only"();

CREATE TRIGGER "RunArtifact_no_truncate"
  BEFORE TRUNCATE ON "RunArtifact"
  FOR EACH STATEMENT EXECUTE FUNCTION "run_artifact_append_only"();

CREATE FUNCTION "run_artifact_sealed"() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  unsealed record;
BEGIN
  SELECT missing."runId", missing."name" INTO unsealed
  FROM (
    SELECT i."runId", i."name", i."sha256", i."sizeBytes", i."mediaType" FROM inserted i
    EXCEPT
    SELECT r."id", a ->> 'name', a ->> 'sha256', (a ->> 'sizeBytes')::integer, a ->> 'mediaType'
    FROM "Run" r CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(r."execution" -> 'artifacts') = 'array'
                                                              THEN r."execution" -> 'artifacts' ELSE '[]'::jsonb END) a
    WHERE r."id" IN (SELECT "runId" FROM inserted)
  ) missing
  LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'RunArtifact %: not in the artifacts run % sealed', unsealed."name", unsealed."runId" USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER "RunArtifact_sealed"
  AFTER INSERT ON "RunArtifact"
  REFERENCING NEW TABLE AS inserted
  FOR EACH STATEMENT EXECUTE FUNCTION "run_artifact_sealed"();
