-- River's insert (JobInsertFast). The harness's priority (higher first) becomes River's
-- (1 first, 1–4).
INSERT INTO river_job (kind, args, priority, max_attempts, queue, state, scheduled_at)
VALUES (:type, :payload::jsonb, GREATEST(1, LEAST(4, 4 - :priority)), :max_retries,
        'default', 'available', now())
RETURNING id
