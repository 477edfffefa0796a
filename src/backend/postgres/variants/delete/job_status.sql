-- Current status and retry_count of the jobs $1 (to settle outcomes the harness could not
-- see); a deleted job is 'done' when the completion audit saw it go, its retry_count gone
-- with its row.
SELECT j.id, j.status, j.retry_count FROM job_state j WHERE j.id = ANY($1::bigint[])
UNION ALL
SELECT DISTINCT a.job_id, 'done', NULL::int
FROM   dbq_bench_completion_audit a
WHERE  a.job_id = ANY($1::bigint[]) AND a.status = 'done'
  AND  NOT EXISTS (SELECT 1 FROM job_state j WHERE j.id = a.job_id)
