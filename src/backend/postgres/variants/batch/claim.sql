-- The seed's claim, taking up to :batch jobs in one statement (queue.claim_batch): the same
-- order, the same SKIP LOCKED, LIMIT :batch instead of LIMIT 1, and = ANY instead of =.
WITH next_jobs AS (
  SELECT id FROM job_queue
  WHERE  status = 'pending' AND next_run_at <= NOW()
  ORDER  BY priority DESC, next_run_at, id
  LIMIT  :batch
  FOR UPDATE SKIP LOCKED
)
UPDATE job_queue SET status = 'processing', started_at = NOW()
WHERE  id = ANY (SELECT id FROM next_jobs)
RETURNING id, type, payload
