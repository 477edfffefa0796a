-- River's rescuer (JobRescueMany): jobs running longer than the rescue threshold ($1, the
-- harness's reaper.stale_after) become retryable, or discarded at max_attempts (their
-- attempt was counted when they were fetched).
UPDATE river_job
SET    state        = CASE WHEN attempt >= max_attempts THEN 'discarded'
                           ELSE 'retryable' END::river_job_state,
       finalized_at = CASE WHEN attempt >= max_attempts THEN now() END,
       scheduled_at = now(),
       errors       = array_append(errors, jsonb_build_object('at', now(), 'attempt', attempt,
                                                              'error', 'stuck'))
WHERE  state = 'running' AND attempted_at < now() - $1::interval
RETURNING id, state::text AS status
