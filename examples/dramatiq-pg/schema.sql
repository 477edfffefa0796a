-- dramatiq-pg 0.12.0's schema, as dramatiq-pg installs it (its generate_init_sql reading of
-- its schema.sql, with the prefix "dramatiq_"), the schema's name taken out: the harness
-- installs it in the run's schema (print_schema.py prints it; a test compares).
-- dbq-bench's additions follow after the marker line.

CREATE TYPE "dramatiq_state" AS ENUM (
  'queued',
  'consumed',
  'rejected',
  'done'
);

CREATE TABLE "dramatiq_queue"(
  message_id uuid PRIMARY KEY,
  queue_name TEXT NOT NULL DEFAULT 'default',
  "state" "dramatiq_state",
  mtime TIMESTAMP WITH TIME ZONE DEFAULT (NOW() AT TIME ZONE 'UTC'),
  -- message as encoded by dramatiq.
  message JSONB,
  "result" JSONB,
  result_ttl  TIMESTAMP WITH TIME ZONE
) WITHOUT OIDS;

-- Index state and mtime together to speed up deletion. This can also speed up
-- statistics when VACUUM ANALYZE is recent enough.
CREATE INDEX ON "dramatiq_queue"("state", mtime);

-- dbq-bench: below this line, not dramatiq-pg's.
--
-- dramatiq's message ids are UUIDs; the harness's are numbers. Each message carries the
-- harness's number in its kwargs (`dbq_job`), beside the harness's payload, and the proof
-- reads jobs by it.
CREATE SEQUENCE dramatiq_job_number;

CREATE INDEX dramatiq_queue_dbq_job ON dramatiq_queue (((message->'kwargs'->>'dbq_job')::bigint));

-- Each job in the harness's words, by the harness's number (design.toml's [states] view).
-- A retry waits in the same row: dramatiq re-enqueues the message, with the same id, into
-- the delay queue `default.DQ` (state queued again) and moves it back to `default` when its
-- back-off is over. `retries` in the message's options counts the failures so far.
CREATE VIEW dramatiq_job_state AS
SELECT (message->'kwargs'->>'dbq_job')::bigint AS id,
       (CASE "state" WHEN 'queued'   THEN 'pending'
                     WHEN 'consumed' THEN 'processing'
                     WHEN 'done'     THEN 'done'
                     WHEN 'rejected' THEN 'dead_letter'
        END)::varchar AS status,
       COALESCE((message->'options'->>'retries')::int, 0) AS retry_count,
       message->'kwargs'->'payload' AS payload
FROM   dramatiq_queue;
