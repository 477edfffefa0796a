-- The article's claim on MariaDB, second half: the UPDATE of the row the SELECT locked.
-- Binds: id.
UPDATE job_queue SET status = 'processing', started_at = NOW(6)
WHERE  id = ?
