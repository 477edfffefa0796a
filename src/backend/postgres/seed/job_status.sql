-- Current status and retry_count of the jobs $1 (to settle outcomes the harness could not
-- see: a finished job, or a failure update that committed after all).
SELECT id, status, retry_count FROM job_queue WHERE id = ANY($1::bigint[])
