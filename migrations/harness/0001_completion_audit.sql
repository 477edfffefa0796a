-- Harness-owned, not part of any queue variant: a record of every transition of a job to
-- 'done' or 'dead_letter', written by the database itself in the same transaction as the
-- transition. The accounting proof counts duplicate completions from it, independently of
-- what the harness's workers report. Costs one INSERT per finished job (scenario key
-- verify.completion_audit = false turns it off).
CREATE TABLE dbq_bench_completion_audit (
  job_id   BIGINT      NOT NULL,
  status   VARCHAR(20) NOT NULL,
  at       TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
);

CREATE FUNCTION dbq_bench_audit_completion() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dbq_bench_completion_audit (job_id, status) VALUES (NEW.id, NEW.status);
  RETURN NULL;
END
$$;

CREATE TRIGGER dbq_bench_audit_completion
  AFTER UPDATE OF status ON job_queue
  FOR EACH ROW
  WHEN (NEW.status IN ('done', 'dead_letter'))
  EXECUTE FUNCTION dbq_bench_audit_completion();
