-- The harness's completion audit on MariaDB (see migrations/harness/): every transition of a
-- job to 'done' or 'dead_letter', written by the trigger in the transaction that made it.
-- MariaDB triggers have no WHEN clause and no UPDATE OF column list: the condition is the
-- SELECT's WHERE, checked for every updated row.
CREATE TABLE dbq_bench_completion_audit (
  job_id   BIGINT       NOT NULL,
  status   VARCHAR(20)  NOT NULL,
  at       TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
) ENGINE = InnoDB;

CREATE TRIGGER dbq_bench_audit_completion
  AFTER UPDATE ON job_queue
  FOR EACH ROW
  INSERT INTO dbq_bench_completion_audit (job_id, status)
  SELECT NEW.id, NEW.status FROM DUAL WHERE NEW.status IN ('done', 'dead_letter');
