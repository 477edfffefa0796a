-- The article's success update, in the same transaction as the claim.
UPDATE job_queue
SET    status = 'done', completed_at = NOW()
WHERE  id = $1
