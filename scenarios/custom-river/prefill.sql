-- River's many-row insert (JobInsertFastMany). Binds: kinds[], args[], priorities[],
-- max_attempts.
INSERT INTO river_job (kind, args, priority, max_attempts, queue, state, scheduled_at)
SELECT k, a::jsonb, GREATEST(1, LEAST(4, 4 - p)), $4, 'default', 'available', now()
FROM   UNNEST($1::text[], $2::text[], $3::int[]) AS j(k, a, p)
RETURNING id
