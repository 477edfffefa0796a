-- Bulk enqueue (prefill before the measured window): one statement per batch of jobs.
INSERT INTO job_queue (type, payload, priority, max_retries)
SELECT t, p::jsonb, pr, $4
FROM   UNNEST($1::text[], $2::text[], $3::int[]) AS u(t, p, pr)
RETURNING id
