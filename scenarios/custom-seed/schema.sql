-- The seed's table and partial index (a copy of migrations/seed/0001_job_queue.sql), as the
-- schema of a custom variant (scenarios/variants.toml runs it beside the seed).
CREATE TABLE job_queue (
  id            BIGSERIAL PRIMARY KEY,
  type          VARCHAR(100) NOT NULL,
  payload       JSONB NOT NULL,
  status        VARCHAR(20) NOT NULL DEFAULT 'pending',
  priority      INT NOT NULL DEFAULT 0,
  retry_count   INT NOT NULL DEFAULT 0,
  max_retries   INT NOT NULL DEFAULT 3,
  next_run_at   TIMESTAMPTZ DEFAULT NOW(),
  started_at    TIMESTAMPTZ,
  completed_at  TIMESTAMPTZ,
  error_msg     TEXT,
  created_at    TIMESTAMPTZ DEFAULT NOW()
);

CREATE INDEX idx_job_queue_pending
  ON job_queue(priority DESC, next_run_at, id)
  WHERE status = 'pending';
