-- The seed's success update for a whole batch in one statement.
UPDATE job_queue
SET    status = 'done', completed_at = NOW()
WHERE  id = ANY($1::bigint[])
