-- What the sampler's own statements read of the queue table in its current transaction
-- (not yet in pg_stat_user_tables): summed over partitions, as stats/table.sql counts.
SELECT COALESCE(sum(s.seq_scan), 0)::bigint      AS seq_scans,
       COALESCE(sum(s.seq_tup_read), 0)::bigint  AS seq_rows,
       COALESCE(sum(s.idx_scan), 0)::bigint      AS index_scans,
       COALESCE(sum(s.idx_tup_fetch), 0)::bigint AS index_rows
FROM   pg_stat_xact_user_tables AS s
WHERE  s.relid = $1::regclass
   OR  s.relid IN (SELECT relid FROM pg_partition_tree($1::regclass) WHERE isleaf)
