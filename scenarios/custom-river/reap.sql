-- River's rescuer (JobRescueMany): jobs running longer than the rescue threshold
-- (:stale_after, the harness's reaper.stale_after) become retryable after their back-off,
-- as River's rescuer asks its retry policy, or discarded at max_attempts (their attempt was
-- counted when they were fetched).
UPDATE river_job
SET    state        = CASE WHEN attempt >= max_attempts THEN 'discarded'
                           ELSE 'retryable' END::river_job_state,
       finalized_at = CASE WHEN attempt >= max_attempts THEN now() END,
       scheduled_at = now() + LEAST(:backoff_base::interval
                                    * POWER(:backoff_factor::float8, attempt - 1),
                                    :backoff_cap::interval)
                            * (:backoff_jitter::float8
                               + (1 - :backoff_jitter::float8) * random()),
       errors       = array_append(errors, jsonb_build_object('at', now(), 'attempt', attempt,
                                                              'error', 'stuck'))
WHERE  state = 'running' AND attempted_at < now() - :stale_after::interval
RETURNING id, state::text AS status
