-- Hand-written (issue 6, the audit log): nothing here is modelled in schema.prisma.
--
-- 1. RunToolCall is append-only like "AuditEvent": a run's tool calls are sealed into the audit
--    chain by its terminal event (data.toolCallsDigest), so they must not change afterwards either.
--    Verification (lib/audit/verify.ts) recomputes the seal; this trigger stops casual edits first.
CREATE FUNCTION "run_tool_call_append_only"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'RunToolCall is append-only: % on "RunToolCall" is not allowed', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER "RunToolCall_no_update_delete"
  BEFORE UPDATE OR DELETE ON "RunToolCall"
  FOR EACH ROW EXECUTE FUNCTION "run_tool_call_append_only"();

CREATE TRIGGER "RunToolCall_no_truncate"
  BEFORE TRUNCATE ON "RunToolCall"
  FOR EACH STATEMENT EXECUTE FUNCTION "run_tool_call_append_only"();

-- 2. Compliance full-text search over a run's code, purpose, result, error, logs and review
--    comments: one tsvector per run ("Run"."searchVector", read with $queryRaw by
--    lib/audit/search.ts) with a GIN index. Each part is capped so that a huge result or log can
--    never push the tsvector over PostgreSQL's 1 MB limit and fail the run's own transaction.
CREATE FUNCTION "run_search_document"(code text, purpose text, result jsonb, error jsonb, stats jsonb, comments text)
RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT setweight(to_tsvector('english'::regconfig, left(coalesce(purpose, ''), 20000)), 'A')
      || setweight(to_tsvector('english'::regconfig, left(coalesce(comments, ''), 40000)), 'A')
      || setweight(to_tsvector('english'::regconfig, left(coalesce(code, ''), 60000)), 'B')
      || setweight(to_tsvector('english'::regconfig, left(coalesce(result::text, '') || ' ' || coalesce(error::text, ''), 60000)), 'C')
      || setweight(to_tsvector('english'::regconfig, left(coalesce((stats -> 'logs')::text, ''), 60000)), 'D')
$$;

ALTER TABLE "Run" ADD COLUMN "searchVector" tsvector;

-- Recomputed on insert, when a searched column changes, or when set to NULL (the Review trigger
-- below does that); heartbeats and other bookkeeping updates do not pay for it.
CREATE FUNCTION "run_search_vector_refresh"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' OR NEW."searchVector" IS NULL
     OR NEW."code" IS DISTINCT FROM OLD."code"
     OR NEW."purpose" IS DISTINCT FROM OLD."purpose"
     OR NEW."result" IS DISTINCT FROM OLD."result"
     OR NEW."error" IS DISTINCT FROM OLD."error"
     OR NEW."stats" IS DISTINCT FROM OLD."stats" THEN
    NEW."searchVector" := "run_search_document"(
      NEW."code", NEW."purpose", NEW."result", NEW."error", NEW."stats",
      (SELECT string_agg("comment", ' ' ORDER BY "createdAt") FROM "Review" WHERE "runId" = NEW."id"));
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER "Run_search_vector"
  BEFORE INSERT OR UPDATE ON "Run"
  FOR EACH ROW EXECUTE FUNCTION "run_search_vector_refresh"();

CREATE FUNCTION "review_comment_search_refresh"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW."comment" IS NOT NULL AND (TG_OP = 'INSERT' OR NEW."comment" IS DISTINCT FROM OLD."comment") THEN
    UPDATE "Run" SET "searchVector" = NULL WHERE "id" = NEW."runId";
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER "Review_comment_search"
  AFTER INSERT OR UPDATE OF "comment" ON "Review"
  FOR EACH ROW EXECUTE FUNCTION "review_comment_search_refresh"();

UPDATE "Run" SET "searchVector" = NULL;

CREATE INDEX "Run_searchVector_idx" ON "Run" USING GIN ("searchVector");
-- Keyset pagination (newest first) and time-range filters.
CREATE INDEX "Run_createdAt_id_idx" ON "Run" ("createdAt" DESC, "id" DESC);
CREATE INDEX "Run_agentId_createdAt_idx" ON "Run" ("agentId", "createdAt" DESC);
-- Tool filter: capabilitySet @> '["server.tool"]'.
CREATE INDEX "Run_capabilitySet_idx" ON "Run" USING GIN ("capabilitySet" jsonb_path_ops);
CREATE INDEX "Review_reviewerId_idx" ON "Review" ("reviewerId");
CREATE INDEX "Agent_ownerId_idx" ON "Agent" ("ownerId");
-- Exports by time range.
CREATE INDEX "AuditEvent_at_idx" ON "AuditEvent" ("at");
