-- Bulk enqueue into the current slot's partition: one statement per batch of jobs.
INSERT INTO job_queue (slot, type, payload, priority, max_retries)
SELECT s.current_slot, t, p::jsonb, pr, $4
FROM   UNNEST($1::text[], $2::text[], $3::int[]) AS u(t, p, pr), rotation_state AS s
RETURNING id
