-- The completion audit on graphile_worker's jobs: a job deleted while a worker held it was
-- completed; a job a worker let go with its attempts used up failed for good. Each is
-- recorded in the same transaction.
CREATE FUNCTION dbq_graphile_audit_end() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    INSERT INTO dbq_bench_completion_audit (job_id, status) VALUES (OLD.id, 'done');
  ELSE
    INSERT INTO dbq_bench_completion_audit (job_id, status) VALUES (NEW.id, 'dead_letter');
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER dbq_graphile_audit_done
  AFTER DELETE ON _private_jobs
  FOR EACH ROW
  WHEN (OLD.locked_at IS NOT NULL)
  EXECUTE FUNCTION dbq_graphile_audit_end();

CREATE TRIGGER dbq_graphile_audit_dead
  AFTER UPDATE ON _private_jobs
  FOR EACH ROW
  WHEN (OLD.locked_at IS NOT NULL AND NEW.locked_at IS NULL AND NEW.attempts >= NEW.max_attempts)
  EXECUTE FUNCTION dbq_graphile_audit_end();
