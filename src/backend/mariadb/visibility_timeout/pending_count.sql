-- Queue depth (MariaDB): jobs waiting (visible, or hidden for a back-off), not those being
-- worked.
SELECT COUNT(*) FROM job_queue
WHERE  dead_at IS NULL AND (claimed_at IS NULL OR vt <= NOW(6))
