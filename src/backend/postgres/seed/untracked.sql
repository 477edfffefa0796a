-- Accounting proof: rows in the table that the harness never saw committed.
SELECT j.id, j.status
FROM   job_queue j
LEFT   JOIN UNNEST($1::bigint[]) AS l(id) ON l.id = j.id
WHERE  l.id IS NULL
ORDER  BY j.id
