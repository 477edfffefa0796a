-- The article's stale-job reaper (MariaDB), on the jobs find_stale.sql locked. Binds: their
-- ids as a JSON array.
UPDATE job_queue
SET    status     = 'pending',
       started_at = NULL,
       error_msg  = 'Worker timeout'
WHERE  status = 'processing'
  AND  id IN (SELECT id FROM JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$')) AS ids)
