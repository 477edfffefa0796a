-- A failure: hidden for the back-off ($3 base, $4 factor, $5 cap, $6 jitter), or archived as
-- a dead letter at its max_retries-th failure. The two branches never match the same row.
WITH dead AS (
  DELETE FROM job_queue WHERE id = $1 AND retry_count + 1 >= max_retries RETURNING *
), archived AS (
  INSERT INTO job_archive (id, type, payload, retry_count, read_ct, outcome, enqueued_at)
  SELECT id, type, payload, retry_count + 1, read_ct, 'dead_letter', enqueued_at FROM dead
  RETURNING id
), retried AS (
  UPDATE job_queue
  SET    retry_count = retry_count + 1, error_msg = $2, claimed_at = NULL,
         vt = NOW() + LEAST($3::interval * POWER($4::float8, retry_count), $5::interval)
                    * ($6::float8 + (1 - $6::float8) * random())
  WHERE  id = $1 AND retry_count + 1 < max_retries
  RETURNING id
)
SELECT CASE WHEN EXISTS (SELECT 1 FROM archived) THEN 'dead_letter' ELSE 'pending' END
         ::varchar AS status
