-- The visibility_timeout design's audit on MariaDB, with the delete design's
-- (migrations/mariadb/delete): a job completes by being deleted, and is dead-lettered when
-- dead_at is set, which is recorded here since the design has no status column.
CREATE TRIGGER dbq_bench_audit_dead_letter
  AFTER UPDATE ON job_queue
  FOR EACH ROW
  INSERT INTO dbq_bench_completion_audit (job_id, status, job_key)
  SELECT NEW.id, 'dead_letter', JSON_VALUE(NEW.payload, '$.k')
  FROM   DUAL
  WHERE  OLD.dead_at IS NULL AND NEW.dead_at IS NOT NULL;
