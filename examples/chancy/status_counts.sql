-- Jobs by status, in the harness's words, in chancy's table.
SELECT status, count(*) FROM chancy_job_state GROUP BY status
