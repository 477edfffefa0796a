-- Move-to-archive: a finished job leaves the hot table for job_queue_archive in the completing
-- transaction; the hot table (and its partial index) holds only unfinished work.
WITH finished AS (
  DELETE FROM job_queue WHERE id = $1
  RETURNING id, type, payload, priority, retry_count, max_retries, next_run_at, started_at, error_msg, created_at
)
INSERT INTO job_queue_archive
       (id, type, payload, status, priority, retry_count, max_retries, next_run_at, started_at, completed_at, error_msg, created_at)
SELECT id, type, payload, 'done', priority, retry_count, max_retries, next_run_at, started_at, NOW(), error_msg, created_at
FROM   finished
