-- The article's failure update. Its backoff, POWER(2, retry_count) * INTERVAL '1 minute', is
-- written with bound parameters: base $3, factor $4, cap $5 (NULL: no cap, LEAST ignores it)
-- and jitter $6, a multiplier of $6 + (1 - $6) * random(): 1 none, 0 full, 0.5 equal. The
-- article's shape is base 1 minute, factor 2, no cap, no jitter. RETURNING tells the worker
-- whether the job was dead-lettered.
UPDATE job_queue
SET    retry_count  = retry_count + 1,
       error_msg    = $2,
       status       = CASE
                        WHEN retry_count + 1 >= max_retries THEN 'dead_letter'
                        ELSE 'pending'
                      END,
       next_run_at  = NOW() + LEAST($3::interval * POWER($4::float8, retry_count), $5::interval)
                            * ($6::float8 + (1 - $6::float8) * random())
WHERE  id = $1
RETURNING status
