-- The rotation design's queue (modelled on PgQ's table rotation): the seed's columns in a
-- table partitioned three ways by slot. Producers insert into the current slot; every
-- period (the scenario's queue.rotation_period) the ticker moves on to the next slot, once that one is empty; and a
-- slot other than the current whose jobs have all finished is truncated, its dead letters
-- kept in job_dead_letter first. Finished rows leave by TRUNCATE, a new empty file, so they
-- never wait for vacuum, whatever holds the xmin horizon back.
CREATE TABLE rotation_state (
  current_slot INT NOT NULL,
  slots        INT NOT NULL DEFAULT 3,
  rotated_at   TIMESTAMPTZ NOT NULL DEFAULT NOW()
);
INSERT INTO rotation_state (current_slot) VALUES (0);

CREATE TABLE job_queue (
  id            BIGSERIAL,
  slot          INT NOT NULL,
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
  created_at    TIMESTAMPTZ DEFAULT NOW(),
  PRIMARY KEY (id, slot)
) PARTITION BY LIST (slot);

CREATE TABLE job_queue_0 PARTITION OF job_queue FOR VALUES IN (0);
CREATE TABLE job_queue_1 PARTITION OF job_queue FOR VALUES IN (1);
CREATE TABLE job_queue_2 PARTITION OF job_queue FOR VALUES IN (2);

CREATE INDEX idx_job_queue_pending
  ON job_queue(priority DESC, next_run_at, id)
  WHERE status = 'pending';

CREATE TABLE job_dead_letter (LIKE job_queue, PRIMARY KEY (id));

-- Each job's status for the proof: in its partition, or kept as a dead letter.
CREATE VIEW job_state AS
SELECT id, status, retry_count, payload FROM job_queue
UNION ALL
SELECT id, status, retry_count, payload FROM job_dead_letter;

-- The ticker (PgQ's pgqd), run once a second: truncates each finished partition, then
-- rotates when the period is up and the next slot is empty. A partition is locked before it
-- is checked, so a job inserted into it by a producer that read the slot before a rotation
-- is seen; a lock not granted within 200 ms (a long transaction reading the queue) skips the
-- partition until the next tick rather than stall the workers queued behind it.
CREATE FUNCTION rotate_queue(period interval) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  st rotation_state%ROWTYPE;
  part text;
  has_rows boolean;
  open_jobs boolean;
  truncated text := '';
BEGIN
  SELECT * INTO st FROM rotation_state;
  SET LOCAL lock_timeout = '200ms';
  FOR s IN 0 .. st.slots - 1 LOOP
    CONTINUE WHEN s = st.current_slot;
    part := 'job_queue_' || s;
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I)', part) INTO has_rows;
    CONTINUE WHEN NOT has_rows;
    BEGIN
      EXECUTE format('LOCK TABLE %I IN ACCESS EXCLUSIVE MODE', part);
      EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I WHERE status IN (''pending'', ''processing''))', part)
        INTO open_jobs;
      IF NOT open_jobs THEN
        EXECUTE format('INSERT INTO job_dead_letter SELECT * FROM %I WHERE status = ''dead_letter''', part);
        EXECUTE format('TRUNCATE %I', part);
        truncated := truncated || part || ' ';
      END IF;
    EXCEPTION WHEN lock_not_available THEN
      NULL;
    END;
  END LOOP;
  IF NOW() - st.rotated_at >= period THEN
    part := 'job_queue_' || (st.current_slot + 1) % st.slots;
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I)', part) INTO has_rows;
    IF NOT has_rows THEN
      UPDATE rotation_state
      SET    current_slot = (current_slot + 1) % slots, rotated_at = NOW();
    END IF;
  END IF;
  RETURN truncated;
END
$$;
