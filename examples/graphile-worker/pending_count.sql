-- Queue depth: jobs waiting for a worker (not held, attempts left; a failed job waiting out
-- its back-off included). graphile_worker has no state column to count by.
SELECT count(*) FROM _private_jobs WHERE locked_at IS NULL AND attempts < max_attempts
