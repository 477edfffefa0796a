-- The seed's claim taking up to :batch jobs (MariaDB, queue.claim_batch).
SELECT id, type, payload
FROM   job_queue
WHERE  status = 'pending' AND next_run_at <= NOW(6)
ORDER  BY priority DESC, next_run_at, id
LIMIT  :batch
FOR UPDATE SKIP LOCKED
