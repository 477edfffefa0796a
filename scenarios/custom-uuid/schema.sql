-- A UUID-keyed queue: the seed's table with a uuid primary key (what the rows are known by)
-- and a bigint identity column named id, the handle the harness tracks each job by (its
-- ledger keeps about one byte per job because ids are dense integers). The claim locks and
-- updates by the uuid key; the other statements, the seed's, find a job by its handle
-- through a unique index. What the handle costs: that index and a sequence.
CREATE TABLE job_queue (
  key           UUID PRIMARY KEY DEFAULT gen_random_uuid(),
  id            BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
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
  ON job_queue(priority DESC, next_run_at, key)
  WHERE status = 'pending';
