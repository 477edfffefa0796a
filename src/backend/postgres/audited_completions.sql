-- Accounting proof: the jobs with ids in [$1, $2) that the completion audit recorded as
-- completed, and how many times each.
SELECT job_id, count(*) AS completions
FROM   dbq_bench_completion_audit
WHERE  status = 'done' AND job_id >= $1 AND job_id < $2
GROUP  BY job_id
ORDER  BY job_id
