-- The article's claim on a UUID-keyed table: the job is locked and updated by its uuid key;
-- the harness is handed the job's bigint handle as its id.
WITH next_job AS (
  SELECT key FROM job_queue
  WHERE  status = 'pending' AND next_run_at <= NOW()
  ORDER  BY priority DESC, next_run_at, key
  LIMIT  1
  FOR UPDATE SKIP LOCKED
)
UPDATE job_queue SET status = 'processing', started_at = NOW()
WHERE  key = (SELECT key FROM next_job)
RETURNING id, type, payload
