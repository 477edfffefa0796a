-- River's insert (JobInsertFast). :priority is already River's (design.toml [priority]).
INSERT INTO river_job (kind, args, priority, max_attempts, queue, state, scheduled_at)
VALUES (:type, :payload::jsonb, :priority, :max_retries, 'default', 'available', now())
RETURNING id
