-- The archive design's completion audit on MariaDB, on top of the harness's: a job completes
-- by moving to the archive, so the audit records each archived row.
CREATE TRIGGER dbq_bench_audit_archive
  AFTER INSERT ON job_queue_archive
  FOR EACH ROW
  INSERT INTO dbq_bench_completion_audit (job_id, status) VALUES (NEW.id, NEW.status);
