-- The seed article's queue table on MariaDB (InnoDB). Differences from the PostgreSQL
-- original, each forced by the engine:
--   BIGSERIAL   -> BIGINT AUTO_INCREMENT
--   JSONB       -> JSON (MariaDB's JSON is LONGTEXT checked by JSON_VALID)
--   TIMESTAMPTZ -> TIMESTAMP(6) (stored in UTC, read in the session's time zone)
--   the partial index WHERE status = 'pending' -> an index led by status (MariaDB has no
--   partial indexes): claims, the reaper and the pending count all start with status.
CREATE TABLE job_queue (
  id            BIGINT AUTO_INCREMENT PRIMARY KEY,
  type          VARCHAR(100) NOT NULL,
  payload       JSON NOT NULL,
  status        VARCHAR(20) NOT NULL DEFAULT 'pending',
  priority      INT NOT NULL DEFAULT 0,
  retry_count   INT NOT NULL DEFAULT 0,
  max_retries   INT NOT NULL DEFAULT 3,
  next_run_at   TIMESTAMP(6) NULL DEFAULT CURRENT_TIMESTAMP(6),
  started_at    TIMESTAMP(6) NULL,
  completed_at  TIMESTAMP(6) NULL,
  error_msg     TEXT,
  created_at    TIMESTAMP(6) NULL DEFAULT CURRENT_TIMESTAMP(6),
  INDEX idx_job_queue_pending (status, priority DESC, next_run_at, id)
) ENGINE = InnoDB;
