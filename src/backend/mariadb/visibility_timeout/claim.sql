-- pgmq's read on MariaDB, first half: the first visible job, locked (mark_claimed.sql hides
-- it in the same transaction). A job whose earlier claim was neither finished nor failed
-- (claimed_at still set) is a redelivery: its worker died, or overran the timeout.
SELECT id, type, payload, claimed_at IS NOT NULL AS redelivered
FROM   job_queue
WHERE  dead_at IS NULL AND vt <= NOW(6)
ORDER  BY priority DESC, vt, id
LIMIT  1
FOR UPDATE SKIP LOCKED
