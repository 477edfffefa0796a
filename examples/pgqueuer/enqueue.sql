-- pgqueuer's own enqueue (Queries.enqueue's statement, one job): the job in its table and
-- `queued` in its log. The payload is the harness's JSON, as the bytes pgqueuer hands the
-- handler and as a header the proof reads.
WITH inserted AS (
  INSERT INTO pgqueuer (priority, entrypoint, payload, execute_after, headers, status)
  VALUES (:priority, 'dbq_bench', convert_to(:payload::text, 'UTF8'), now(), :payload::jsonb, 'queued')
  RETURNING id, entrypoint, priority
), logged AS (
  INSERT INTO pgqueuer_log (job_id, status, entrypoint, priority)
  SELECT id, 'queued', entrypoint, priority FROM inserted
)
SELECT id FROM inserted
