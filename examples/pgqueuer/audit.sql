-- The completion audit on pgqueuer: its log records each job's end (the same statement that
-- deletes the job from its table, or holds it `failed`), so each final log entry is one
-- completion in the harness's words. A job pgqueuer records successful twice is a duplicate.
CREATE FUNCTION pgqueuer_audit_end() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dbq_bench_completion_audit (job_id, status)
  VALUES (NEW.job_id, CASE WHEN NEW.status = 'successful' THEN 'done' ELSE 'dead_letter' END);
  RETURN NULL;
END
$$;

CREATE TRIGGER pgqueuer_audit_end
  AFTER INSERT ON pgqueuer_log
  FOR EACH ROW
  WHEN (NEW.status IN ('successful', 'exception', 'canceled', 'deleted', 'failed'))
  EXECUTE FUNCTION pgqueuer_audit_end();
