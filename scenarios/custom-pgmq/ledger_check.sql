-- The proof's table side: the jobs ($1) whose state is not the one the ledger expects ($2).
SELECT l.id, COALESCE(j.status, 'missing') AS status, l.expected
FROM   UNNEST($1::bigint[], $2::text[]) AS l(id, expected)
LEFT   JOIN job_state j ON j.id = l.id
WHERE  j.id IS NULL
   OR  j.status NOT IN ('done', 'dead_letter')
   OR  j.status <> l.expected
ORDER  BY l.id
