-- Accounting proof, table side (MariaDB, archive design: over job_state, the queue and the
-- archive): binds one JSON array of [id, expected] pairs, the jobs the harness saw
-- committed and the final state its ledger expects ('done', 'dead_letter' or 'open');
-- returns the jobs whose row is missing, not finished, or in another state.
SELECT l.id, COALESCE(j.status, 'missing') AS status, l.expected
FROM   JSON_TABLE(?, '$[*]' COLUMNS (id       BIGINT      PATH '$[0]',
                                     expected VARCHAR(20) PATH '$[1]')) AS l
LEFT   JOIN job_state j ON j.id = l.id
WHERE  j.id IS NULL
   OR  j.status NOT IN ('done', 'dead_letter')
   OR  j.status <> l.expected
ORDER  BY l.id
