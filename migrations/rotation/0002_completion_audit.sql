-- The rotation design's audit: the harness's (migrations/harness), recording each job's key
-- too, since a truncated partition leaves nothing else to resolve an insert whose commit
-- outcome was unknown by.
ALTER TABLE dbq_bench_completion_audit ADD COLUMN job_key TEXT;

CREATE OR REPLACE FUNCTION dbq_bench_audit_completion() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dbq_bench_completion_audit (job_id, status, job_key)
  VALUES (NEW.id, NEW.status, NEW.payload->>'k');
  RETURN NULL;
END
$$;
