-- Accounting proof: jobs the harness never saw committed, whether their row is still in the
-- table or was deleted on completion (then only the completion audit remembers them).
SELECT seen.id, seen.status FROM (
  SELECT j.id, j.status FROM job_state j
  UNION
  SELECT a.job_id, 'done' FROM dbq_bench_completion_audit a WHERE a.status = 'done'
) AS seen
LEFT   JOIN UNNEST($1::bigint[]) AS l(id) ON l.id = seen.id
WHERE  l.id IS NULL
ORDER  BY seen.id
