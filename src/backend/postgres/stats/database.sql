-- Database-wide counters, WAL position, the oldest open transaction (the xmin horizon) and
-- the notification queue.
SELECT d.xact_commit,
       d.xact_rollback,
       d.deadlocks,
       pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint                       AS wal_bytes,
       COALESCE((SELECT max(age(backend_xmin)) FROM pg_stat_activity
                 WHERE datname = current_database()), 0)::bigint                  AS xmin_age_xids,
       COALESCE((SELECT extract(epoch FROM now() - min(xact_start)) FROM pg_stat_activity
                 WHERE datname = current_database() AND pid <> pg_backend_pid()), 0)::float8
                                                                                  AS oldest_xact_s,
       pg_notification_queue_usage()                                              AS notify_queue_usage
FROM   pg_stat_database d
WHERE  d.datname = current_database()
