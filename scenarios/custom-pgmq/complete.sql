-- pgmq's archive: the finished job moves to job_archive.
WITH done AS (DELETE FROM job_queue WHERE id = $1 RETURNING *)
INSERT INTO job_archive (id, type, payload, retry_count, read_ct, outcome, enqueued_at)
SELECT id, type, payload, retry_count, read_ct, 'done', enqueued_at FROM done
