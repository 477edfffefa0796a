-- The plain-index variant: the seed's table (migrations/seed) with its claim index made a
-- plain one, without the partial predicate: status leads the key instead (the index MySQL and
-- MariaDB, which have no partial indexes, would use). Every row of every status stays in the
-- index, so the index grows with the table, not with the backlog, and the claim walks past
-- the entries of finished jobs until VACUUM removes dead ones.
DROP INDEX idx_job_queue_pending;

CREATE INDEX idx_job_queue_status
  ON job_queue(status, priority DESC, next_run_at, id);
