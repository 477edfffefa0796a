-- Jobs by status (a scan of the queue table: one per sample).
SELECT status, count(*) FROM job_queue GROUP BY status
