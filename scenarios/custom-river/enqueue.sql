-- River's insert (JobInsertFast). Binds: $1 kind, $2 args (the harness's JSON), $3 the
-- harness's priority (higher first) turned into River's (1 first, 1–4), $4 max_attempts.
INSERT INTO river_job (kind, args, priority, max_attempts, queue, state, scheduled_at)
VALUES ($1, $2::jsonb, GREATEST(1, LEAST(4, 4 - $3)), $4, 'default', 'available', now())
RETURNING id
