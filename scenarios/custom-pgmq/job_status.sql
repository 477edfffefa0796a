-- Status and retry count of the jobs $1, wherever they are.
SELECT id, status, retry_count FROM job_state WHERE id = ANY($1::bigint[])
