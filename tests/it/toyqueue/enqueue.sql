-- toyqueue's enqueue: the first run and queue.max_retries more.
INSERT INTO toy_jobs (payload, max_attempts) VALUES (:payload::jsonb, :max_retries + 1)
RETURNING id
