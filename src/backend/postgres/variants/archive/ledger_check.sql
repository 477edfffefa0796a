-- Accounting proof, table side, for the archive variant: a job's row is in the hot table or,
-- once completed, in the archive.
SELECT l.id, f.status, l.expected
FROM   UNNEST($1::bigint[], $2::text[]) AS l(id, expected)
CROSS  JOIN LATERAL (
         SELECT COALESCE((SELECT j.status FROM job_queue j WHERE j.id = l.id),
                         (SELECT a.status FROM job_queue_archive a WHERE a.id = l.id),
                         'missing') AS status) AS f
WHERE  f.status NOT IN ('done', 'dead_letter')
   OR  f.status <> l.expected
ORDER  BY l.id
