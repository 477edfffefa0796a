-- The seed's success update for a whole batch (MariaDB). Binds: the ids as a JSON array.
UPDATE job_queue
SET    status = 'done', completed_at = NOW(6)
WHERE  id IN (SELECT id FROM JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$')) AS ids)
