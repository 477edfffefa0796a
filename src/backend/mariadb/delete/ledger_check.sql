-- Accounting proof, table side, for the delete-like designs (MariaDB: delete,
-- visibility_timeout): as the seed's over the design's job_state view, but a job whose row
-- is gone counts as done when the completion audit recorded its deletion. Binds
-- one JSON array of [id, expected] pairs. The view is read by a scalar subquery, not a LEFT
-- JOIN: MariaDB 10.11 answers a prepared LEFT JOIN to a view whose status is a CASE wrongly
-- when it is executed again (the CASE of a missing row read as 'pending').
SELECT f.id, f.status, f.expected
FROM (
  SELECT l.id, l.expected,
         COALESCE((SELECT j.status FROM job_state j WHERE j.id = l.id),
                  (SELECT 'done' FROM dbq_bench_completion_audit a
                   WHERE a.job_id = l.id AND a.status = 'done' LIMIT 1),
                  'missing') AS status
  FROM   JSON_TABLE(?, '$[*]' COLUMNS (id       BIGINT      PATH '$[0]',
                                       expected VARCHAR(20) PATH '$[1]')) AS l
) AS f
WHERE  f.status NOT IN ('done', 'dead_letter')
   OR  f.status <> f.expected
ORDER  BY f.id
