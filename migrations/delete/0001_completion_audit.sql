-- The delete variant's completion audit, on top of the harness's (migrations/harness): a
-- completed job's row is deleted, so the audit records the deletion as its completion, with
-- the job's key, which is how the accounting proof tells a completed job from a lost one.
ALTER TABLE dbq_bench_completion_audit ADD COLUMN job_key TEXT;

CREATE FUNCTION dbq_bench_audit_deletion() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dbq_bench_completion_audit (job_id, status, job_key)
  VALUES (OLD.id, 'done', OLD.payload->>'k');
  RETURN NULL;
END
$$;

CREATE TRIGGER dbq_bench_audit_deletion
  AFTER DELETE ON job_queue
  FOR EACH ROW
  EXECUTE FUNCTION dbq_bench_audit_deletion();
