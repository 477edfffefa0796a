-- What the run's own sessions ($1: application_name pattern) are waiting on right now.
SELECT COALESCE(wait_event_type || ':' || wait_event, 'CPU (no wait event)'), count(*)
FROM   pg_stat_activity
WHERE  application_name LIKE $1
  AND  pid <> pg_backend_pid()
  AND  state <> 'idle'
GROUP  BY 1
