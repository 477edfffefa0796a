-- The delete design's audit on MariaDB, on top of the harness's (migrations/mariadb): a
-- completed job's row is deleted, so the audit records the deletion as its completion, with
-- the job's key, which is how the proof tells a completed job from a lost one. Indexed by
-- job: the proof looks each deleted job up in it.
ALTER TABLE dbq_bench_completion_audit
  ADD COLUMN job_key VARCHAR(200),
  ADD INDEX dbq_bench_audit_job (job_id),
  ADD INDEX dbq_bench_audit_key (job_key);

CREATE TRIGGER dbq_bench_audit_deletion
  AFTER DELETE ON job_queue
  FOR EACH ROW
  INSERT INTO dbq_bench_completion_audit (job_id, status, job_key)
  VALUES (OLD.id, 'done', JSON_VALUE(OLD.payload, '$.k'));
