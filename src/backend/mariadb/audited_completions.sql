-- Accounting proof (MariaDB): the jobs with ids in [first ?, second ?) that the completion
-- audit recorded as completed, and how many times each.
SELECT job_id, count(*) AS completions
FROM   dbq_bench_completion_audit
WHERE  status = 'done' AND job_id >= ? AND job_id < ?
GROUP  BY job_id
ORDER  BY job_id
