-- Current status and retry_count of the jobs whose ids are the bound JSON array (MariaDB;
-- joined: a primary-key lookup each).
SELECT j.id, j.status, j.retry_count
FROM   JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$')) AS ids
JOIN   job_queue j ON j.id = ids.id
