-- Jobs whose payload key is one of the bound JSON array, in the table or, once deleted on
-- completion, in the audit (MariaDB, delete-like designs, over job_state).
WITH wanted AS (SELECT k FROM JSON_TABLE(?, '$[*]' COLUMNS (k VARCHAR(200) PATH '$')) AS t)
SELECT id, JSON_VALUE(payload, '$.k') AS `key`
FROM   job_state
WHERE  JSON_VALUE(payload, '$.k') IN (SELECT k FROM wanted)
UNION
SELECT job_id, job_key
FROM   dbq_bench_completion_audit
WHERE  job_key IN (SELECT k FROM wanted)
