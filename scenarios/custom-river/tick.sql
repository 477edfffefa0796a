-- River's scheduler (JobSchedule): retryable and scheduled jobs whose time has come become
-- available to the fetch.
UPDATE river_job
SET    state = 'available'
WHERE  state IN ('retryable', 'scheduled') AND scheduled_at <= now()
