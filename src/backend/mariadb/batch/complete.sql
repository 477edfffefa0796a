-- The seed's success update for a whole batch (MariaDB). Binds: the ids as a JSON array
-- (joined, as in mark_claimed.sql, so each id is a primary-key lookup).
UPDATE job_queue j
JOIN   JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$')) AS ids ON j.id = ids.id
SET    j.status = 'done', j.completed_at = NOW(6)
