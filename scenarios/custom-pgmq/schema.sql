-- A custom design in the shape of pgmq (a visibility timeout and a read count, no status
-- column; a finished job is archived), written for the custom contract. A job is visible
-- when vt has passed; claimed_at is set by a claim and cleared by a failure, so a visible
-- job that still has it lost its worker, and its next claim is a redelivery.
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
  error_msg    TEXT,
  enqueued_at  TIMESTAMPTZ NOT NULL DEFAULT NOW()
);

CREATE INDEX job_queue_vt ON job_queue (vt, id);

-- pgmq's archive: finished jobs, done or given up on.
CREATE TABLE job_archive (
  id           BIGINT PRIMARY KEY,
  type         VARCHAR(100) NOT NULL,
  payload      JSONB NOT NULL,
  retry_count  INT NOT NULL,
  read_ct      INT NOT NULL,
  outcome      VARCHAR(20) NOT NULL,
  enqueued_at  TIMESTAMPTZ NOT NULL,
  archived_at  TIMESTAMPTZ NOT NULL DEFAULT NOW()
);

-- Each job's status in the harness's words, which this directory's proof files read.
CREATE VIEW job_state AS
SELECT id,
       CASE WHEN claimed_at IS NOT NULL AND vt > NOW() THEN 'processing' ELSE 'pending' END
         ::varchar(20) AS status,
       retry_count, payload
FROM   job_queue
UNION ALL
SELECT id, outcome, retry_count, payload FROM job_archive;
