-- The archive variant's completion audit, on top of the harness's (migrations/harness): a
-- job completes by moving to the archive, so the audit records each archived row.
CREATE FUNCTION dbq_bench_audit_archive() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dbq_bench_completion_audit (job_id, status) VALUES (NEW.id, NEW.status);
  RETURN NULL;
END
$$;

CREATE TRIGGER dbq_bench_audit_archive
  AFTER INSERT ON job_queue_archive
  FOR EACH ROW
  EXECUTE FUNCTION dbq_bench_audit_archive();
