-- The plain-index variant: the seed's table with its claim index made a plain one, without
-- the partial predicate: status leads the key instead (the index MySQL and MariaDB, which have
-- no partial indexes, would use). Every row of every status stays in the index, so the claim
-- walks past the entries of finished jobs until VACUUM removes dead ones, and the index grows
-- with the table, not with the backlog.
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

CREATE INDEX idx_job_queue_status
  ON job_queue(status, priority DESC, next_run_at, id);
