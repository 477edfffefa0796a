-- Accounting proof, table side, for the delete variant: as the seed's, but a job whose row
-- is gone counts as done when the completion audit recorded its deletion.
SELECT l.id, f.status, l.expected
FROM   UNNEST($1::bigint[], $2::text[]) AS l(id, expected)
CROSS  JOIN LATERAL (
         SELECT COALESCE((SELECT j.status FROM job_state j WHERE j.id = l.id),
                         (SELECT 'done' FROM dbq_bench_completion_audit a
                          WHERE a.job_id = l.id AND a.status = 'done' LIMIT 1),
                         'missing') AS status) AS f
WHERE  f.status NOT IN ('done', 'dead_letter')
   OR  f.status <> l.expected
ORDER  BY l.id
