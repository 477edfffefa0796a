-- In-doubt inserts, looked up by the key in their payload.
SELECT (kwargs->>'dbq_job')::bigint AS id, kwargs->>'k' AS key
FROM   chancy_jobs
WHERE  kwargs->>'k' = ANY($1::text[])
