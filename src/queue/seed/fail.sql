-- The article's failure update. Its backoff unit (INTERVAL '1 minute') is the bound
-- parameter $3 (scenario key queue.backoff_unit). RETURNING tells the worker whether the job
-- was dead-lettered.
UPDATE job_queue
SET    retry_count  = retry_count + 1,
       error_msg    = $2,
       status       = CASE
                        WHEN retry_count + 1 >= max_retries THEN 'dead_letter'
                        ELSE 'pending'
                      END,
       next_run_at  = NOW() + POWER(2, retry_count) * $3::interval
WHERE  id = $1
RETURNING status
