-- The failure: the job is hidden for its back-off (the seed's formula: base $3, factor $4,
-- cap $5, jitter $6), or, at its max_retries-th failure, marked dead and never visible again.
UPDATE job_queue
SET    retry_count = retry_count + 1,
       error_msg   = $2,
       claimed_at  = NULL,
       dead_at     = CASE WHEN retry_count + 1 >= max_retries THEN NOW() END,
       vt          = CASE
                       WHEN retry_count + 1 >= max_retries THEN 'infinity'
                       ELSE NOW() + LEAST($3::interval * POWER($4::float8, retry_count), $5::interval)
                                  * ($6::float8 + (1 - $6::float8) * random())
                     END
WHERE  id = $1
RETURNING CASE WHEN dead_at IS NULL THEN 'pending' ELSE 'dead_letter' END::varchar AS status
