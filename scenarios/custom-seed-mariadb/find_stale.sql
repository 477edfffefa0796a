-- The reaper's first half (MariaDB): the jobs processing for longer than the bound number of
-- microseconds, locked (SKIP LOCKED: a job whose worker is finishing it right now is left to
-- that worker). reap.sql or reap_counting.sql then updates them in the same transaction.
SELECT id
FROM   job_queue
WHERE  status = 'processing'
  AND  started_at < NOW(6) - INTERVAL ? MICROSECOND
FOR UPDATE SKIP LOCKED
