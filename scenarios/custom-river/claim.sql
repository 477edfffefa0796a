-- River's fetch (JobGetAvailable): the first available jobs of the queue by priority, locked
-- with SKIP LOCKED, set running with the attempt counted and the worker recorded.
WITH locked_jobs AS (
  SELECT id
  FROM   river_job
  WHERE  state = 'available' AND queue = 'default' AND scheduled_at <= now()
  ORDER  BY priority ASC, scheduled_at ASC, id ASC
  LIMIT  :batch
  FOR UPDATE SKIP LOCKED
)
UPDATE river_job
SET    state        = 'running',
       attempt      = river_job.attempt + 1,
       attempted_at = now(),
       attempted_by = array_append(river_job.attempted_by, 'dbq-bench')
FROM   locked_jobs
WHERE  river_job.id = locked_jobs.id
RETURNING river_job.id, river_job.kind AS type, river_job.args AS payload
