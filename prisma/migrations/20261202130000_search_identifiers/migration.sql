-- Hand-written (nothing here is modelled in schema.prisma): the compliance search finds
-- identifiers by their parts, and searches tool-call arguments and results and the provenance.
--
-- 1. "search_identifier_words"(text): for every identifier in the text that has parts (dots,
--    underscores, camelCase: `tools.ledger.issueRefund`), the words a person may type for it:
--    its parts in order ("tools ledger issue refund", so a phrase of parts matches), each dotted
--    segment joined ("tools ledger issuerefund") and each dotted suffix ("tools.ledger.issuerefund
--    ledger.issuerefund"). lib/audit/search.ts splits identifiers in the query the same way.
CREATE FUNCTION "search_identifier_words"(source text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT coalesce(string_agg(
           lower(regexp_replace(regexp_replace(regexp_replace(i.ident, '([A-Z]+)([A-Z][a-z])', '\1 \2', 'g'),
                                               '([a-z0-9])([A-Z])', '\1 \2', 'g'), '[._$]+', ' ', 'g'))
           || ' ' || array_to_string(s.segs, ' ')
           || coalesce((SELECT ' ' || string_agg(array_to_string(s.segs[k:], '.'), ' ')
                        FROM generate_series(1, cardinality(s.segs) - 1) AS k), ''),
         ' '), '')
  FROM (SELECT DISTINCT m[1] AS ident
        FROM regexp_matches(source, '([A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*)', 'g') AS m) i
  CROSS JOIN LATERAL (SELECT string_to_array(lower(replace(replace(i.ident, '_', ''), '$', '')), '.') AS segs) s
  WHERE i.ident ~ '[._$]|[a-z0-9][A-Z]' AND length(i.ident) <= 200
$$;

-- 2. One part of the document: the text (capped) and its identifier words (capped at half of
--    that), at one weight.
CREATE FUNCTION "search_document_part"(source text, cap integer, weight "char") RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT setweight(to_tsvector('english'::regconfig, left(coalesce(source, ''), cap))
                   || to_tsvector('english'::regconfig, left("search_identifier_words"(left(coalesce(source, ''), cap)), cap / 2)), weight)
$$;

-- 3. The document: purpose and review comments (A), code and provenance — model, conversation,
--    prompt, context — (B), tool calls — name, arguments, result — and the result and error (C),
--    logs (D). Payloads purged by retention are NULL and simply drop out. Each part is capped
--    (`scale` 1: at most ~540k characters in all, which ordinary text keeps far below tsvector's
--    1 MB limit; the refresh trigger retries at scale 0.1, ≤ 54k characters, ≤ ~330 kB whatever
--    the text, when a pathological text does not fit), so no content can fail the run's own
--    transaction.
DROP FUNCTION "run_search_document"(text, text, jsonb, jsonb, jsonb, text);

CREATE FUNCTION "run_search_document"(code text, purpose text, provenance jsonb, result jsonb, error jsonb,
                                      execution jsonb, comments text, tool_calls text, scale real)
RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT "search_document_part"(purpose, (20000 * scale)::integer, 'A')
      || "search_document_part"(comments, (40000 * scale)::integer, 'A')
      || "search_document_part"(code, (60000 * scale)::integer, 'B')
      || "search_document_part"(provenance::text, (20000 * scale)::integer, 'B')
      || "search_document_part"(tool_calls, (100000 * scale)::integer, 'C')
      || "search_document_part"(coalesce(result::text, '') || ' ' || coalesce(error::text, ''), (60000 * scale)::integer, 'C')
      || setweight(to_tsvector('english'::regconfig, left(coalesce((execution -> 'logs')::text, ''), (60000 * scale)::integer)), 'D')
$$;

-- The text of a run's tool calls for its document: the first 200 calls in order, each one's
-- arguments and result capped (a run may make thousands; the document stays bounded and cheap).
CREATE FUNCTION "run_tool_calls_search_text"(run_id uuid) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT string_agg(c."server" || '.' || c."tool" || ' ' || left(coalesce(c."args"::text, ''), 2000)
                    || ' ' || left(coalesce(c."result"::text, ''), 4000) || ' ' || coalesce(c."error", ''), ' ' ORDER BY c."seq")
  FROM (SELECT "server", "tool", "args", "result", "error", "seq" FROM "RunToolCall"
        WHERE "runId" = run_id ORDER BY "seq" LIMIT 200) c
$$;

CREATE OR REPLACE FUNCTION "run_search_vector_refresh"() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  comments text;
  calls text;
BEGIN
  IF TG_OP = 'INSERT' OR NEW."searchVector" IS NULL
     OR NEW."code" IS DISTINCT FROM OLD."code"
     OR NEW."purpose" IS DISTINCT FROM OLD."purpose"
     OR NEW."provenance" IS DISTINCT FROM OLD."provenance"
     OR NEW."result" IS DISTINCT FROM OLD."result"
     OR NEW."error" IS DISTINCT FROM OLD."error"
     OR NEW."execution" IS DISTINCT FROM OLD."execution" THEN
    comments := (SELECT string_agg("comment", ' ' ORDER BY "createdAt") FROM "Review" WHERE "runId" = NEW."id");
    calls := "run_tool_calls_search_text"(NEW."id");
    BEGIN
      NEW."searchVector" := "run_search_document"(
        NEW."code", NEW."purpose", NEW."provenance", NEW."result", NEW."error", NEW."execution", comments, calls, 1);
    EXCEPTION WHEN program_limit_exceeded THEN
      NEW."searchVector" := "run_search_document"(
        NEW."code", NEW."purpose", NEW."provenance", NEW."result", NEW."error", NEW."execution", comments, calls, 0.1);
    END;
  END IF;
  RETURN NEW;
END;
$$;

-- 4. Tool calls are written after the run row (lib/runs/call-recorder.ts: in batches while the
--    run executes, completed later, purged by retention): each statement that inserts or updates
--    calls the document holds (the first 200 of a run) has their runs' documents rebuilt, once
--    per run per statement. Later calls are not in the document and cost nothing.
CREATE FUNCTION "run_tool_call_search_refresh"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE "Run" SET "searchVector" = NULL WHERE "id" IN (SELECT DISTINCT "runId" FROM changed_calls WHERE "seq" <= 200);
  RETURN NULL;
END;
$$;

CREATE TRIGGER "RunToolCall_search_insert"
  AFTER INSERT ON "RunToolCall" REFERENCING NEW TABLE AS changed_calls
  FOR EACH STATEMENT EXECUTE FUNCTION "run_tool_call_search_refresh"();

CREATE TRIGGER "RunToolCall_search_update"
  AFTER UPDATE ON "RunToolCall" REFERENCING NEW TABLE AS changed_calls
  FOR EACH STATEMENT EXECUTE FUNCTION "run_tool_call_search_refresh"();

-- 5. Re-index every run with the new document.
UPDATE "Run" SET "searchVector" = NULL;
