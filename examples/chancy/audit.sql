-- The completion audit on chancy's state column, by the harness's number of the job (its
-- id is a UUID): each update to succeeded or failed is recorded in the same transaction.
CREATE FUNCTION chancy_audit_end() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dbq_bench_completion_audit (job_id, status)
  VALUES ((NEW.kwargs->>'dbq_job')::bigint,
          CASE WHEN NEW.state = 'succeeded' THEN 'done' ELSE 'dead_letter' END);
  RETURN NULL;
END
$$;

CREATE TRIGGER chancy_audit_end
  AFTER UPDATE OF state ON chancy_jobs
  FOR EACH ROW
  WHEN (NEW.state IN ('succeeded', 'failed'))
  EXECUTE FUNCTION chancy_audit_end();
