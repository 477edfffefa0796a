-- Accounting proof (MariaDB, archive design: over job_state, the queue and the archive):
-- rows with ids in [from, to) that the harness never saw committed. Binds: from, to, the
-- known ids as a JSON array.
SELECT j.id, j.status
FROM   job_state j
WHERE  j.id >= ? AND j.id < ?
  AND  j.id NOT IN (SELECT id FROM JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$')) AS l)
ORDER  BY j.id
