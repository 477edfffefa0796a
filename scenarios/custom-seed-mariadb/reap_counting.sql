-- The reaper counting a reap as a failed attempt (reaper.count_as_attempt), MariaDB. status
-- comes before retry_count: a single-table UPDATE's SET runs left to right, each assignment
-- seeing the ones before it (a multi-table UPDATE guarantees no order, so this one is not a
-- join). `status = 'processing'` keeps it on the index led by status.
UPDATE job_queue
SET    status      = CASE
                       WHEN retry_count + 1 >= max_retries THEN 'dead_letter'
                       ELSE 'pending'
                     END,
       retry_count = retry_count + 1,
       started_at  = NULL,
       error_msg   = 'Worker timeout'
WHERE  status = 'processing'
  AND  id IN (SELECT id FROM JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$')) AS ids)
