-- The article's claim, verbatim (run inside the worker's transaction).
WITH next_job AS (
  SELECT id FROM job_queue
  WHERE  status = 'pending' AND next_run_at <= NOW()
  ORDER  BY priority DESC, next_run_at, id
  LIMIT  1
  FOR UPDATE SKIP LOCKED
)
UPDATE job_queue SET status = 'processing', started_at = NOW()
WHERE  id = (SELECT id FROM next_job)
RETURNING id, type, payload
