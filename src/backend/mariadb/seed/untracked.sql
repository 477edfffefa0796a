-- Accounting proof (MariaDB): rows with ids in [from, to) that the harness never saw
-- committed. Binds: from, to, the known ids as a JSON array.
SELECT j.id, j.status
FROM   job_queue j
WHERE  j.id >= ? AND j.id < ?
  AND  j.id NOT IN (SELECT id FROM JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$')) AS l)
ORDER  BY j.id
