-- The MariaDB seed's table (a copy of migrations/mariadb/0001_job_queue.sql), as the schema
-- of a custom variant on MariaDB.
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
