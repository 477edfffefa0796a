-- The visibility_timeout design's queue (modelled on pgmq): no status column. A job is
-- visible when vt has passed; a claim moves vt ahead by the visibility timeout and counts
-- the read; completion deletes the row; a failure hides the job for its back-off, or marks
-- it dead (dead_at) after max_retries failures. claimed_at is set by a claim and cleared by
-- a failure, so a visible job that still has it was claimed by a worker that never came
-- back: its next claim is a redelivery.
CREATE TABLE job_queue (
  id           BIGSERIAL PRIMARY KEY,
  type         VARCHAR(100) NOT NULL,
  payload      JSONB NOT NULL,
  priority     INT NOT NULL DEFAULT 0,
  max_retries  INT NOT NULL DEFAULT 3,
  retry_count  INT NOT NULL DEFAULT 0,
  read_ct      INT NOT NULL DEFAULT 0,
  vt           TIMESTAMPTZ NOT NULL DEFAULT NOW(),
  claimed_at   TIMESTAMPTZ,
  dead_at      TIMESTAMPTZ,
  error_msg    TEXT,
  created_at   TIMESTAMPTZ DEFAULT NOW()
);

CREATE INDEX idx_job_queue_visible
  ON job_queue(priority DESC, vt, id)
  WHERE dead_at IS NULL;

-- Each job's status in the proof's words, derived from the columns above.
CREATE VIEW job_state AS
SELECT id,
       CASE WHEN dead_at IS NOT NULL THEN 'dead_letter'
            WHEN claimed_at IS NOT NULL AND vt > NOW() THEN 'processing'
            ELSE 'pending' END::varchar(20) AS status,
       retry_count,
       payload
FROM   job_queue;
