-- The failure (MariaDB): the job is hidden for its back-off (the seed's formula, in
-- microseconds), or, at its max_retries-th failure, marked dead and never visible again.
-- SET runs left to right, so retry_count is incremented last; the status is read back from
-- job_state (no RETURNING on UPDATE).
UPDATE job_queue
SET    error_msg   = :error,
       claimed_at  = NULL,
       dead_at     = CASE WHEN retry_count + 1 >= max_retries THEN NOW(6) END,
       vt          = NOW(6) + INTERVAL FLOOR(
                       LEAST(:backoff_base * POW(:backoff_factor, retry_count),
                             COALESCE(:backoff_cap, 1e15))
                       * (:backoff_jitter + (1 - :backoff_jitter) * RAND())) MICROSECOND,
       retry_count = retry_count + 1
WHERE  id = :id
