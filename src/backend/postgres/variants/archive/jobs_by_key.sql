-- Jobs whose payload key is one of $1, in the hot table or the archive.
SELECT id, payload->>'k' AS key FROM job_queue WHERE payload->>'k' = ANY($1::text[])
UNION ALL
SELECT id, payload->>'k' AS key FROM job_queue_archive WHERE payload->>'k' = ANY($1::text[])
