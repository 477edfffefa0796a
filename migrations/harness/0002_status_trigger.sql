-- The completion audit's trigger for designs with a status column (the seed's): each update
-- of a job to a final status is recorded, in the same transaction.
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
