-- Accounting proof, table side: for each job the harness saw committed ($1) with the final
-- state its ledger expects ($2: 'done', 'dead_letter' or 'open'), return the jobs whose row is
-- missing, not finished, or in another state than the ledger says.
SELECT l.id, COALESCE(j.status, 'missing') AS status, l.expected
FROM   UNNEST($1::bigint[], $2::text[]) AS l(id, expected)
LEFT   JOIN job_queue j ON j.id = l.id
WHERE  j.id IS NULL
   OR  j.status NOT IN ('done', 'dead_letter')
   OR  j.status <> l.expected
ORDER  BY l.id
