-- Jobs by status (MariaDB; a scan of the index led by status).
SELECT status, COUNT(*) FROM job_queue GROUP BY status
