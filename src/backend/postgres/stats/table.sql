-- The queue table's tuple counts, maintenance and read counters and sizes: summed over its
-- partitions for a partitioned table (rotation), the table alone otherwise (pg_partition_tree
-- has no rows for a table that is not partitioned).
SELECT COALESCE(sum(s.n_live_tup), 0)::bigint        AS live_tuples,
       COALESCE(sum(s.n_dead_tup), 0)::bigint        AS dead_tuples,
       COALESCE(sum(s.vacuum_count), 0)::bigint      AS vacuums,
       COALESCE(sum(s.autovacuum_count), 0)::bigint  AS autovacuums,
       COALESCE(sum(s.analyze_count), 0)::bigint     AS analyzes,
       COALESCE(sum(s.autoanalyze_count), 0)::bigint AS autoanalyzes,
       COALESCE(sum(s.seq_scan), 0)::bigint          AS seq_scans,
       COALESCE(sum(s.seq_tup_read), 0)::bigint      AS seq_rows,
       COALESCE(sum(s.idx_scan), 0)::bigint          AS index_scans,
       COALESCE(sum(s.idx_tup_fetch), 0)::bigint     AS index_rows,
       COALESCE(sum(pg_relation_size(s.relid)), 0)::bigint       AS table_bytes,
       COALESCE(sum(pg_total_relation_size(s.relid)), 0)::bigint AS total_bytes
FROM   pg_stat_user_tables AS s
WHERE  s.relid = $1::regclass
   OR  s.relid IN (SELECT relid FROM pg_partition_tree($1::regclass) WHERE isleaf)
