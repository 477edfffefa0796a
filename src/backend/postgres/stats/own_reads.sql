-- What this session read of the queue table and has not yet reported to pg_stat_user_tables
-- (pg_stat_xact_user_tables: its current transaction and, until the session reports, the
-- ones before), summed over partitions as stats/table.sql counts.
SELECT COALESCE(sum(s.seq_scan), 0)::bigint      AS seq_scans,
       COALESCE(sum(s.seq_tup_read), 0)::bigint  AS seq_rows,
       COALESCE(sum(s.idx_scan), 0)::bigint      AS index_scans,
       COALESCE(sum(s.idx_tup_fetch), 0)::bigint AS index_rows
FROM   pg_stat_xact_user_tables AS s
WHERE  s.relid = $1::regclass
   OR  s.relid IN (SELECT relid FROM pg_partition_tree($1::regclass) WHERE isleaf)
