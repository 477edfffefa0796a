-- Current status of the jobs $1 (to settle outcomes the harness could not see).
SELECT id, status FROM job_queue WHERE id = ANY($1::bigint[])
