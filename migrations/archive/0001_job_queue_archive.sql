-- The archive variant: the seed's table and index, plus an archive table with the same
-- columns that finished jobs move to when they complete.
CREATE TABLE job_queue_archive (
  id            BIGINT PRIMARY KEY,
  type          VARCHAR(100) NOT NULL,
  payload       JSONB NOT NULL,
  status        VARCHAR(20) NOT NULL,
  priority      INT NOT NULL,
  retry_count   INT NOT NULL,
  max_retries   INT NOT NULL,
  next_run_at   TIMESTAMPTZ,
  started_at    TIMESTAMPTZ,
  completed_at  TIMESTAMPTZ,
  error_msg     TEXT,
  created_at    TIMESTAMPTZ
);
