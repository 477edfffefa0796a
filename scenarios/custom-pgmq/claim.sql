-- pgmq's read: up to :batch visible jobs become invisible for :visibility_timeout, their
-- read count goes up. redelivered: the job's earlier claim was neither finished nor failed.
WITH next_jobs AS (
  SELECT id, claimed_at FROM job_queue
  WHERE  vt <= NOW()
  ORDER  BY vt, id
  LIMIT  :batch
  FOR UPDATE SKIP LOCKED
)
UPDATE job_queue AS j
SET    vt = NOW() + :visibility_timeout, read_ct = j.read_ct + 1, claimed_at = NOW()
FROM   next_jobs AS n
WHERE  j.id = n.id
RETURNING j.id, j.type, j.payload, n.claimed_at IS NOT NULL AS redelivered
