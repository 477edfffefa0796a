-- Accounting proof (MariaDB, delete-like designs, over job_state): jobs with ids in
-- [from, to) the harness never saw committed, whether their row is still there or only the
-- audit remembers them. Binds: from, to, the known ids as a JSON array.
WITH bounds AS (SELECT ? AS lo, ? AS hi),
     known  AS (SELECT id FROM JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$')) AS l)
SELECT seen.id, seen.status FROM (
  SELECT j.id, j.status FROM job_state j
  UNION
  SELECT a.job_id, 'done' FROM dbq_bench_completion_audit a WHERE a.status = 'done'
) AS seen, bounds
WHERE  seen.id >= bounds.lo AND seen.id < bounds.hi
  AND  seen.id NOT IN (SELECT id FROM known)
ORDER  BY seen.id
