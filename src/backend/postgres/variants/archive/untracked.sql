-- Accounting proof: rows the harness never saw committed, in the hot table or the archive.
SELECT seen.id, seen.status FROM (
  SELECT id, status FROM job_queue
  UNION ALL
  SELECT id, status FROM job_queue_archive
) AS seen
LEFT   JOIN UNNEST($1::bigint[]) AS l(id) ON l.id = seen.id
WHERE  l.id IS NULL
ORDER  BY seen.id
