-- The seed's claim, taking up to $1 jobs in one statement (queue.claim_batch): the same
-- order, the same SKIP LOCKED, LIMIT $1 instead of LIMIT 1, and = ANY instead of =.
WITH next_jobs AS (
  SELECT id FROM job_queue
  WHERE  status = 'pending' AND next_run_at <= NOW()
  ORDER  BY priority DESC, next_run_at, id
  LIMIT  $1
  FOR UPDATE SKIP LOCKED
)
UPDATE job_queue SET status = 'processing', started_at = NOW()
WHERE  id = ANY (SELECT id FROM next_jobs)
RETURNING id, type, payload
