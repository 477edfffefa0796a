-- pgmq's read: the first visible job becomes invisible for the visibility timeout and its
-- read count goes up; no status is written. A job whose earlier claim was neither finished
-- nor failed (claimed_at still set) is a redelivery: its worker died, or overran the
-- timeout while another took the job.
WITH next_job AS (
  SELECT id, claimed_at FROM job_queue
  WHERE  vt <= NOW() AND dead_at IS NULL
  ORDER  BY priority DESC, vt, id
  LIMIT  1
  FOR UPDATE SKIP LOCKED
)
UPDATE job_queue AS j
SET    vt         = NOW() + :visibility_timeout,
       read_ct    = j.read_ct + 1,
       claimed_at = NOW()
FROM   next_job AS n
WHERE  j.id = n.id
RETURNING j.id, j.type, j.payload, n.claimed_at IS NOT NULL AS redelivered
