-- The article's failure update. Its backoff, POWER(2, retry_count) * INTERVAL '1 minute', is
-- written with the scenario's values: :backoff_base, :backoff_factor, :backoff_cap (NULL: no
-- cap, LEAST ignores it) and :backoff_jitter, a multiplier of jitter + (1 - jitter) *
-- random(): 1 none, 0 full, 0.5 equal. The article's shape is base 1 minute, factor 2, no
-- cap, no jitter. RETURNING tells the worker whether the job was dead-lettered.
UPDATE job_queue
SET    retry_count  = retry_count + 1,
       error_msg    = :error,
       status       = CASE
                        WHEN retry_count + 1 >= max_retries THEN 'dead_letter'
                        ELSE 'pending'
                      END,
       next_run_at  = NOW() + LEAST(:backoff_base::interval
                                    * POWER(:backoff_factor::float8, retry_count),
                                    :backoff_cap::interval)
                            * (:backoff_jitter::float8 + (1 - :backoff_jitter::float8) * random())
WHERE  id = :id
RETURNING status
