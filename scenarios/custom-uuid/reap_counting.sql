-- The reaper with the fix for the article's hole (reaper.count_as_attempt): a reap counts as
-- a failed attempt, so a job that keeps crashing its worker ends in dead_letter after
-- max_retries instead of being retried forever.
UPDATE job_queue
SET    status      = CASE
                       WHEN retry_count + 1 >= max_retries THEN 'dead_letter'
                       ELSE 'pending'
                     END,
       retry_count = retry_count + 1,
       started_at  = NULL,
       error_msg   = 'Worker timeout'
WHERE  status      = 'processing'
  AND  started_at  < NOW() - $1::interval
RETURNING id, status
