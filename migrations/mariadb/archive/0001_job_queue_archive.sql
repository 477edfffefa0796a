-- The archive design on MariaDB: the seed's table and index, plus an archive table with the
-- same columns that finished jobs move to when they complete. MariaDB cannot feed an INSERT
-- from a DELETE … RETURNING, so the move is a procedure of two statements, called by
-- complete.sql in the completing transaction: one round trip, as PostgreSQL's CTE.
CREATE TABLE job_queue_archive (
  id            BIGINT PRIMARY KEY,
  type          VARCHAR(100) NOT NULL,
  payload       JSON NOT NULL,
  status        VARCHAR(20) NOT NULL,
  priority      INT NOT NULL,
  retry_count   INT NOT NULL,
  max_retries   INT NOT NULL,
  next_run_at   TIMESTAMP(6) NULL,
  started_at    TIMESTAMP(6) NULL,
  completed_at  TIMESTAMP(6) NULL,
  error_msg     TEXT,
  created_at    TIMESTAMP(6) NULL
) ENGINE = InnoDB;

CREATE PROCEDURE archive_job(IN job BIGINT)
BEGIN
  INSERT INTO job_queue_archive
         (id, type, payload, status, priority, retry_count, max_retries, next_run_at,
          started_at, completed_at, error_msg, created_at)
  SELECT id, type, payload, 'done', priority, retry_count, max_retries, next_run_at,
         started_at, NOW(6), error_msg, created_at
  FROM   job_queue WHERE id = job;
  DELETE FROM job_queue WHERE id = job;
END;

-- Each job's status for the proof, wherever the job is.
CREATE VIEW job_state AS
SELECT id, status, retry_count, payload FROM job_queue
UNION ALL
SELECT id, status, retry_count, payload FROM job_queue_archive;
