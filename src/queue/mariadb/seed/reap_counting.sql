-- The reaper counting a reap as a failed attempt (reaper.count_as_attempt), MariaDB. status
-- comes before retry_count: MariaDB's SET reads the values assigned before it.
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
