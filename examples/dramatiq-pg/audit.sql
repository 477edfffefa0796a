-- The completion audit on dramatiq-pg's state column, by the harness's number of the job (its
-- id is a UUID): each update to done or rejected is recorded in the same transaction.
CREATE FUNCTION dramatiq_audit_end() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dbq_bench_completion_audit (job_id, status)
  VALUES ((NEW.message->'kwargs'->>'dbq_job')::bigint,
          CASE WHEN NEW."state" = 'done' THEN 'done' ELSE 'dead_letter' END);
  RETURN NULL;
END
$$;

CREATE TRIGGER dramatiq_audit_end
  AFTER UPDATE OF "state" ON dramatiq_queue
  FOR EACH ROW
  WHEN (NEW."state" IN ('done', 'rejected') AND OLD."state" IS DISTINCT FROM NEW."state")
  EXECUTE FUNCTION dramatiq_audit_end();
