-- The failure: the job is hidden for its back-off (the seed's formula), or, at its
-- max_retries-th failure, marked dead and never visible again.
UPDATE job_queue
SET    retry_count = retry_count + 1,
       error_msg   = :error,
       claimed_at  = NULL,
       dead_at     = CASE WHEN retry_count + 1 >= max_retries THEN NOW() END,
       vt          = CASE
                       WHEN retry_count + 1 >= max_retries THEN 'infinity'
                       ELSE NOW() + LEAST(:backoff_base::interval
                                          * POWER(:backoff_factor::float8, retry_count),
                                          :backoff_cap::interval)
                                  * (:backoff_jitter::float8
                                     + (1 - :backoff_jitter::float8) * random())
                     END
WHERE  id = :id
RETURNING CASE WHEN dead_at IS NULL THEN 'pending' ELSE 'dead_letter' END::varchar AS status
