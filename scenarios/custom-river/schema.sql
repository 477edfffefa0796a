-- River's job table (riverqueue/river, riverpgxv5 migrations 002–006), its state enum and its
-- fetching index, unchanged but for what this port leaves out (unique keys, the notify
-- trigger, the leader and queue tables).
CREATE TYPE river_job_state AS ENUM (
  'available', 'cancelled', 'completed', 'discarded', 'pending', 'retryable', 'running',
  'scheduled'
);

CREATE TABLE river_job (
  id           bigserial PRIMARY KEY,
  state        river_job_state NOT NULL DEFAULT 'available',
  attempt      smallint NOT NULL DEFAULT 0,
  max_attempts smallint NOT NULL,
  attempted_at timestamptz,
  created_at   timestamptz NOT NULL DEFAULT now(),
  finalized_at timestamptz,
  scheduled_at timestamptz NOT NULL DEFAULT now(),
  priority     smallint NOT NULL DEFAULT 1,
  args         jsonb NOT NULL DEFAULT '{}',
  attempted_by text[],
  errors       jsonb[],
  kind         text NOT NULL,
  metadata     jsonb NOT NULL DEFAULT '{}',
  queue        text NOT NULL DEFAULT 'default',
  tags         varchar(255)[] NOT NULL DEFAULT '{}',
  CONSTRAINT finalized_or_finalized_at_null CHECK (
    (finalized_at IS NULL AND state NOT IN ('cancelled', 'completed', 'discarded')) OR
    (finalized_at IS NOT NULL AND state IN ('cancelled', 'completed', 'discarded'))
  ),
  CONSTRAINT max_attempts_is_positive CHECK (max_attempts > 0),
  CONSTRAINT priority_in_range CHECK (priority >= 1 AND priority <= 4),
  CONSTRAINT kind_length CHECK (char_length(kind) > 0 AND char_length(kind) < 128)
);

CREATE INDEX river_job_kind ON river_job USING btree (kind);
CREATE INDEX river_job_state_and_finalized_at_index ON river_job USING btree (state, finalized_at)
  WHERE finalized_at IS NOT NULL;
CREATE INDEX river_job_prioritized_fetching_index ON river_job
  USING btree (state, queue, priority, scheduled_at, id);

-- River's insert notification (migration 002's river_job_notify): workers LISTEN on
-- river_insert and fetch at once instead of waiting for their poll (design.toml wake_up).
CREATE FUNCTION river_job_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.state = 'available' THEN
    PERFORM pg_notify('river_insert', json_build_object('queue', NEW.queue)::text);
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER river_notify
  AFTER INSERT ON river_job
  FOR EACH ROW
  EXECUTE FUNCTION river_job_notify();
