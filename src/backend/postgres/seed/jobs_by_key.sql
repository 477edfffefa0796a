-- Jobs whose payload key ("k") is one of $1: resolves inserts whose commit outcome was
-- unknown, and finds jobs of rolled-back business transactions (there must be none).
SELECT id, payload->>'k' AS key
FROM   job_queue
WHERE  payload->>'k' = ANY($1::text[])
