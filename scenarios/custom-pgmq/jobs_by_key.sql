-- Jobs whose payload key is one of $1, in the queue or the archive.
SELECT id, payload->>'k' AS key FROM job_state WHERE payload->>'k' = ANY($1::text[])
