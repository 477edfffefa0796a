-- toyqueue's enqueue, many jobs at once (one array element per job), in order.
INSERT INTO toy_jobs (payload, max_attempts)
SELECT a::jsonb, :max_retries + 1
FROM   UNNEST(:payloads::text[]) WITH ORDINALITY AS j(a, n)
ORDER  BY n
RETURNING id
