-- Jobs waiting: visible, or hidden for a back-off (not those being worked).
SELECT count(*) FROM job_queue WHERE claimed_at IS NULL OR vt <= NOW()
