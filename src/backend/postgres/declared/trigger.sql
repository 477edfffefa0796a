-- The completion audit on a declared state column: each update of a job to one of its done
-- or dead-letter states is recorded, in the same transaction, in the harness's words.
CREATE FUNCTION dbq_bench_audit_completion() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dbq_bench_completion_audit (job_id, status)
  VALUES (NEW.id, CASE WHEN NEW.{state} IN ({done}) THEN 'done' ELSE 'dead_letter' END);
  RETURN NULL;
END
$$;

CREATE TRIGGER dbq_bench_audit_completion
  AFTER UPDATE OF {state} ON {table}
  FOR EACH ROW
  WHEN (NEW.{state} IN ({done}, {dead_letter}))
  EXECUTE FUNCTION dbq_bench_audit_completion();
