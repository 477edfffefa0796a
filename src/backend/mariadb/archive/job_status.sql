-- Current status and retry_count of the jobs whose ids are the bound JSON array (MariaDB,
-- archive design: over job_state, the queue and the archive).
SELECT j.id, j.status, j.retry_count
FROM   JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$')) AS ids
JOIN   job_state j ON j.id = ids.id
