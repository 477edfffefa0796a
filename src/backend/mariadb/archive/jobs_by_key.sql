-- Jobs whose payload key ("k") is one of the bound JSON array of keys (MariaDB, archive
-- design: over job_state, the queue and the archive).
SELECT id, JSON_VALUE(payload, '$.k') AS `key`
FROM   job_state
WHERE  JSON_VALUE(payload, '$.k') IN
         (SELECT k FROM JSON_TABLE(?, '$[*]' COLUMNS (k VARCHAR(200) PATH '$')) AS keys_)
