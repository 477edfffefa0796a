-- The article's failure update (MariaDB). MariaDB runs SET assignments left to right, each
-- seeing the ones before it, so retry_count is incremented last and the others read its old
-- value, as in PostgreSQL. The backoff is in microseconds: base * factor^retry_count, capped
-- (a NULL cap is no cap: COALESCE, since MariaDB's LEAST returns NULL for a NULL argument),
-- times jitter + (1 - jitter) * RAND(). The job's new status is read back with job_status.sql
-- (no RETURNING on UPDATE).
UPDATE job_queue
SET    status       = CASE
                        WHEN retry_count + 1 >= max_retries THEN 'dead_letter'
                        ELSE 'pending'
                      END,
       error_msg    = :error,
       next_run_at  = NOW(6) + INTERVAL FLOOR(
                        LEAST(:backoff_base * POW(:backoff_factor, retry_count),
                              COALESCE(:backoff_cap, 1e15))
                        * (:backoff_jitter + (1 - :backoff_jitter) * RAND())) MICROSECOND,
       retry_count  = retry_count + 1
WHERE  id = :id
