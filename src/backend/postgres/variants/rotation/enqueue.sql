-- Enqueue one job into the current slot's partition.
INSERT INTO job_queue (slot, type, payload, priority, max_retries)
SELECT current_slot, $1, $2::jsonb, $3, $4 FROM rotation_state
RETURNING id
