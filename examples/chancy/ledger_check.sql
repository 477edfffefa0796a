-- Accounting proof: the given jobs that are missing, unfinished, or finished otherwise than
-- the ledger expects (chancy_job_state in schema.sql: chancy's jobs by the harness's number).
SELECT l.id, COALESCE(j.status, 'missing') AS status, l.expected
FROM   UNNEST($1::bigint[], $2::text[]) AS l(id, expected)
LEFT   JOIN chancy_job_state j ON j.id = l.id
WHERE  j.id IS NULL
   OR  j.status NOT IN ('done', 'dead_letter')
   OR  j.status <> l.expected
ORDER  BY l.id
