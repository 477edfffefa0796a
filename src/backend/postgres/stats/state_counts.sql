-- Jobs by status, as the design's job_state view derives it (a scan of the table).
SELECT status, count(*) FROM job_state GROUP BY status
