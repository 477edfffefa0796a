-- Current status and retry_count of the jobs whose ids are the bound JSON array (MariaDB).
SELECT id, status, retry_count
FROM   job_queue
WHERE  id IN (SELECT id FROM JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$')) AS ids)
