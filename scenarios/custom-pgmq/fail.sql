-- A failure: hidden for the scenario's back-off, or archived as a dead letter at its
-- max_retries-th failure. The two branches never match the same row.
WITH dead AS (
  DELETE FROM job_queue WHERE id = :id AND retry_count + 1 >= max_retries RETURNING *
), archived AS (
  INSERT INTO job_archive (id, type, payload, retry_count, read_ct, outcome, enqueued_at)
  SELECT id, type, payload, retry_count + 1, read_ct, 'dead_letter', enqueued_at FROM dead
  RETURNING id
), retried AS (
  UPDATE job_queue
  SET    retry_count = retry_count + 1, error_msg = :error, claimed_at = NULL,
         vt = NOW() + LEAST(:backoff_base::interval
                            * POWER(:backoff_factor::float8, retry_count),
                            :backoff_cap::interval)
                    * (:backoff_jitter::float8 + (1 - :backoff_jitter::float8) * random())
  WHERE  id = :id AND retry_count + 1 < max_retries
  RETURNING id
)
SELECT CASE WHEN EXISTS (SELECT 1 FROM archived) THEN 'dead_letter' ELSE 'pending' END
         ::varchar AS status
