-- Harness-owned, not part of any queue variant: a record of every transition of a job to
-- 'done' or 'dead_letter', written by the database itself in the same transaction as the
-- transition. The accounting proof counts duplicate completions from it, independently of
-- what the harness's workers report. Costs one INSERT per finished job (scenario key
-- verify.completion_audit = false turns it off). A design with a status column has it filled by
-- 0002_status_trigger.sql; a design without one brings its own triggers.
CREATE TABLE dbq_bench_completion_audit (
  job_id   BIGINT      NOT NULL,
  status   VARCHAR(20) NOT NULL,
  at       TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
);
