-- Jobs by status, as job_state derives it.
SELECT status, count(*) FROM job_state GROUP BY status
