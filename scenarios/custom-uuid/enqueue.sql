-- Enqueue one job: the article's outbox insert, with the columns a scenario varies.
INSERT INTO job_queue (type, payload, priority, max_retries)
VALUES ($1, $2::jsonb, $3, $4)
RETURNING id
