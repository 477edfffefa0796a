-- Database-wide counters, WAL position, the oldest open transaction (the xmin horizon), the
-- notification queue, and the server's checkpoints so far (pg_stat_checkpointer from
-- PostgreSQL 17, read through query_to_xml so that the statement parses on older servers;
-- pg_stat_bgwriter's columns before, read through to_jsonb for the same reason).
SELECT d.xact_commit,
       d.xact_rollback,
       d.deadlocks,
       pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint                       AS wal_bytes,
       COALESCE((SELECT max(age(backend_xmin)) FROM pg_stat_activity
                 WHERE datname = current_database()), 0)::bigint                  AS xmin_age_xids,
       COALESCE((SELECT extract(epoch FROM now() - min(xact_start)) FROM pg_stat_activity
                 WHERE datname = current_database() AND pid <> pg_backend_pid()), 0)::float8
                                                                                  AS oldest_xact_s,
       pg_notification_queue_usage()                                              AS notify_queue_usage,
       COALESCE(CASE WHEN to_regclass('pg_catalog.pg_stat_checkpointer') IS NOT NULL
         THEN ((xpath('/row/n/text()', query_to_xml(
                'SELECT num_timed + num_requested AS n FROM pg_stat_checkpointer',
                false, true, '')))[1])::text::bigint
         ELSE (SELECT (to_jsonb(b) ->> 'checkpoints_timed')::bigint
                      + (to_jsonb(b) ->> 'checkpoints_req')::bigint
               FROM pg_stat_bgwriter b)
       END, 0)                                                                    AS checkpoints
FROM   pg_stat_database d
WHERE  d.datname = current_database()
