-- The article's claim on MariaDB, first half: MariaDB has no UPDATE … RETURNING, so the
-- claim's CTE becomes the locking SELECT itself (same filter, order, LIMIT and SKIP LOCKED),
-- and mark_claimed.sql updates the row in the same transaction.
SELECT id, type, payload
FROM   job_queue
WHERE  status = 'pending' AND next_run_at <= NOW(6)
ORDER  BY priority DESC, next_run_at, id
LIMIT  1
FOR UPDATE SKIP LOCKED
