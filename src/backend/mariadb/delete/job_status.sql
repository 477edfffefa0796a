-- Current status and retry_count of the jobs whose ids are the bound JSON array (MariaDB,
-- delete-like designs, over job_state); a deleted job is 'done' when the audit saw it go,
-- its retry_count gone with its row.
WITH ids AS (SELECT id FROM JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$')) AS t)
SELECT j.id, j.status, j.retry_count
FROM   ids JOIN job_state j ON j.id = ids.id
UNION ALL
SELECT DISTINCT a.job_id, 'done', NULL
FROM   ids JOIN dbq_bench_completion_audit a ON a.job_id = ids.id AND a.status = 'done'
WHERE  NOT EXISTS (SELECT 1 FROM job_state j WHERE j.id = a.job_id)
