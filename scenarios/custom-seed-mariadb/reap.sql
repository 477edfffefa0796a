-- The article's stale-job reaper (MariaDB), on the jobs find_stale.sql locked. Binds: their
-- ids as a JSON array. A single-table UPDATE, so its SET runs left to right (see
-- reap_counting.sql); `status = 'processing'` keeps it on the index led by status, so the
-- IN subquery is checked only for the jobs in progress.
UPDATE job_queue
SET    status     = 'pending',
       started_at = NULL,
       error_msg  = 'Worker timeout'
WHERE  status = 'processing'
  AND  id IN (SELECT id FROM JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$')) AS ids)
