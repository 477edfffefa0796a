-- The visibility_timeout design's queue on MariaDB (modelled on pgmq, as
-- migrations/visibility_timeout is on PostgreSQL): no status column. A job is visible when
-- vt has passed; a claim moves vt ahead by the visibility timeout and counts the read;
-- completion deletes the row; a failure hides the job for its back-off, or marks it dead
-- (dead_at) after max_retries failures. claimed_at is set by a claim and cleared by a
-- failure, so a visible job that still has it was claimed by a worker that never came back.
-- MariaDB has no partial index: the index is led by dead_at, which claims ask to be NULL.
CREATE TABLE job_queue (
  id           BIGINT AUTO_INCREMENT PRIMARY KEY,
  type         VARCHAR(100) NOT NULL,
  payload      JSON NOT NULL,
  priority     INT NOT NULL DEFAULT 0,
  max_retries  INT NOT NULL DEFAULT 3,
  retry_count  INT NOT NULL DEFAULT 0,
  read_ct      INT NOT NULL DEFAULT 0,
  vt           TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  claimed_at   TIMESTAMP(6) NULL,
  dead_at      TIMESTAMP(6) NULL,
  error_msg    TEXT,
  created_at   TIMESTAMP(6) NULL DEFAULT CURRENT_TIMESTAMP(6),
  INDEX idx_job_queue_visible (dead_at, priority DESC, vt, id)
) ENGINE = InnoDB;

-- Each job's status in the proof's words, derived from the columns above.
CREATE VIEW job_state AS
SELECT id,
       CASE WHEN dead_at IS NOT NULL THEN 'dead_letter'
            WHEN claimed_at IS NOT NULL AND vt > NOW(6) THEN 'processing'
            ELSE 'pending' END AS status,
       retry_count,
       payload
FROM   job_queue;
