-- The article's stale-job reaper: jobs processing for longer than $1 (the article: 10
-- minutes) go back to pending. RETURNING tells the harness which jobs were rescued.
UPDATE job_queue
SET    status     = 'pending',
       started_at = NULL,
       error_msg  = 'Worker timeout'
WHERE  status     = 'processing'
  AND  started_at < NOW() - $1::interval
RETURNING id, status
