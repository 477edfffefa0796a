-- The completion audit's trigger for designs with a status column (the seed's). MariaDB
-- triggers have no WHEN clause and no UPDATE OF column list: the condition is the SELECT's
-- WHERE, checked for every updated row.
CREATE TRIGGER dbq_bench_audit_completion
  AFTER UPDATE ON job_queue
  FOR EACH ROW
  INSERT INTO dbq_bench_completion_audit (job_id, status)
  SELECT NEW.id, NEW.status FROM DUAL WHERE NEW.status IN ('done', 'dead_letter');
