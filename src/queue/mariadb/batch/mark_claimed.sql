-- The batch claim's UPDATE (MariaDB). Binds: the locked ids as a JSON array.
UPDATE job_queue SET status = 'processing', started_at = NOW(6)
WHERE  id IN (SELECT id FROM JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$')) AS ids)
