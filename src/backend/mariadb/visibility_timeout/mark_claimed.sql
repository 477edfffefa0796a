-- pgmq's read on MariaDB, second half: the locked job becomes invisible for the visibility
-- timeout (microseconds) and its read count goes up; no status is written.
UPDATE job_queue
SET    vt         = NOW(6) + INTERVAL :visibility_timeout MICROSECOND,
       read_ct    = read_ct + 1,
       claimed_at = NOW(6)
WHERE  id = :id
