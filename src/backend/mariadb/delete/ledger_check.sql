-- Accounting proof, table side, for the delete-like designs (MariaDB: delete,
-- visibility_timeout): as the seed's over the design's job_state view, but a job whose row
-- is gone counts as done when the completion audit recorded its deletion. Binds
-- one JSON array of [id, expected] pairs.
SELECT f.id, f.status, f.expected
FROM (
  SELECT l.id, l.expected,
         COALESCE(j.status,
                  (SELECT 'done' FROM dbq_bench_completion_audit a
                   WHERE a.job_id = l.id AND a.status = 'done' LIMIT 1),
                  'missing') AS status
  FROM   JSON_TABLE(?, '$[*]' COLUMNS (id       BIGINT      PATH '$[0]',
                                       expected VARCHAR(20) PATH '$[1]')) AS l
  LEFT   JOIN job_state j ON j.id = l.id
) AS f
WHERE  f.status NOT IN ('done', 'dead_letter')
   OR  f.status <> f.expected
ORDER  BY f.id
