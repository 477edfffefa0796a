-- Accounting proof: jobs in chancy's table the harness never saw committed.
SELECT j.id, j.status
FROM   chancy_job_state j
LEFT   JOIN UNNEST($1::bigint[]) AS l(id) ON l.id = j.id
WHERE  l.id IS NULL
ORDER  BY j.id
