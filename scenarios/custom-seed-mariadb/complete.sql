-- The article's success update (MariaDB). Binds: id.
UPDATE job_queue
SET    status = 'done', completed_at = NOW(6)
WHERE  id = ?
