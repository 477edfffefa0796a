-- toyqueue's table: a job waits (queued) until run_at, runs (running), and ends done or dead
-- once its attempts (failed runs) reach max_attempts.
CREATE TABLE toy_jobs (
  id           bigserial PRIMARY KEY,
  state        text NOT NULL DEFAULT 'queued',
  payload      jsonb NOT NULL,
  attempts     int NOT NULL DEFAULT 0,
  max_attempts int NOT NULL,
  run_at       timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX toy_jobs_queued ON toy_jobs (run_at, id) WHERE state = 'queued';
