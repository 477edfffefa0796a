-- This design's completion audit: the harness's audit table records each job archived (a
-- job finishes by moving to the archive, done or dead_letter). With an audit.sql, the
-- harness attaches nothing of its own to the design's tables.
CREATE FUNCTION audit_archived() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dbq_bench_completion_audit (job_id, status) VALUES (NEW.id, NEW.outcome);
  RETURN NULL;
END
$$;

CREATE TRIGGER audit_archived
  AFTER INSERT ON job_archive
  FOR EACH ROW
  EXECUTE FUNCTION audit_archived();
