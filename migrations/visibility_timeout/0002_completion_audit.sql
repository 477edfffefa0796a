-- The visibility_timeout design's audit, with the delete design's (migrations/delete): a job
-- completes by being deleted, and is dead-lettered when dead_at is set, which is recorded
-- here since the design has no status column for the harness's trigger.
CREATE FUNCTION dbq_bench_audit_dead_letter() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dbq_bench_completion_audit (job_id, status, job_key)
  VALUES (NEW.id, 'dead_letter', NEW.payload->>'k');
  RETURN NULL;
END
$$;

CREATE TRIGGER dbq_bench_audit_dead_letter
  AFTER UPDATE OF dead_at ON job_queue
  FOR EACH ROW
  WHEN (OLD.dead_at IS NULL AND NEW.dead_at IS NOT NULL)
  EXECUTE FUNCTION dbq_bench_audit_dead_letter();
