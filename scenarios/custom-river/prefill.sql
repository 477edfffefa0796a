-- River's many-row insert (JobInsertFastMany), one array element per job.
INSERT INTO river_job (kind, args, priority, max_attempts, queue, state, scheduled_at)
SELECT k, a::jsonb, p, :max_retries, 'default', 'available', now()
FROM   UNNEST(:types::text[], :payloads::text[], :priorities::int[]) AS j(k, a, p)
RETURNING id
