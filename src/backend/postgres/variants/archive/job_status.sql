-- Current status and retry_count of the jobs $1, in the hot table or the archive.
SELECT id, status, retry_count FROM job_queue WHERE id = ANY($1::bigint[])
UNION ALL
SELECT id, status, retry_count FROM job_queue_archive WHERE id = ANY($1::bigint[])
