-- Jobs by status, in the harness's words, in pgqueuer's table and log.
SELECT status, count(*) FROM pgqueuer_job_state GROUP BY status
