-- Accounting proof: jobs the database recorded as completed more than once.
SELECT job_id, count(*) AS completions
FROM   dbq_bench_completion_audit
WHERE  status = 'done'
GROUP  BY job_id
HAVING count(*) > 1
ORDER  BY job_id
