-- River's error path (JobSetStateIfRunning with an error): the error is appended; the job is
-- discarded at max_attempts, otherwise retryable after its back-off (the harness's formula
-- over the failed attempts so far, where River's default is attempt^4 with jitter). Returns
-- River's own state name, which design.toml maps.
UPDATE river_job
SET    errors       = array_append(errors, jsonb_build_object('at', now(), 'attempt', attempt,
                                                              'error', :error::text)),
       state        = CASE WHEN attempt >= max_attempts THEN 'discarded'
                           ELSE 'retryable' END::river_job_state,
       finalized_at = CASE WHEN attempt >= max_attempts THEN now() END,
       scheduled_at = CASE
                        WHEN attempt >= max_attempts THEN scheduled_at
                        ELSE now() + LEAST(:backoff_base::interval
                                           * POWER(:backoff_factor::float8, attempt - 1),
                                           :backoff_cap::interval)
                                   * (:backoff_jitter::float8
                                      + (1 - :backoff_jitter::float8) * random())
                      END
WHERE  id = :id AND state = 'running'
RETURNING state::text AS status
