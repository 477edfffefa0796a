-- Jobs by status (MariaDB), as the design's job_state view derives them.
SELECT status, COUNT(*) FROM job_state GROUP BY status
