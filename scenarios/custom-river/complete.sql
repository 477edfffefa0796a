-- River's completion (JobSetStateIfRunning): only a job still running is completed; a worker
-- whose job the rescuer took back completes nothing (a stale completion).
UPDATE river_job
SET    state = 'completed', finalized_at = now()
WHERE  id = :id AND state = 'running'
