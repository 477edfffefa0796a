-- Queue depth (MariaDB): answered from the index led by status.
SELECT COUNT(*) FROM job_queue WHERE status = 'pending'
