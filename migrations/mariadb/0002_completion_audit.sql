-- The harness's completion audit on MariaDB (see migrations/harness/): every transition of a
-- job to 'done' or 'dead_letter', written by a trigger in the transaction that made it. The
-- trigger is 0003's for a design with a status column, or the design's own.
CREATE TABLE dbq_bench_completion_audit (
  job_id   BIGINT       NOT NULL,
  status   VARCHAR(20)  NOT NULL,
  at       TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
) ENGINE = InnoDB;
