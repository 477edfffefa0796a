-- The seed's insert plus a wake-up: pg_notify on the run's channel ($5), delivered to
-- listening workers when the insert commits (and dropped with it on a rollback).
WITH job AS (
  INSERT INTO job_queue (type, payload, priority, max_retries)
  VALUES ($1, $2::jsonb, $3, $4)
  RETURNING id
), wake AS (
  SELECT pg_notify($5, '')
)
SELECT job.id FROM job, wake
