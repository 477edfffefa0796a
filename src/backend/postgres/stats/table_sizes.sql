-- Size and tuple counts of the queue table (statistics collector counts and on-disk sizes),
-- summed over its partitions for a partitioned table.
SELECT COALESCE(sum(s.n_live_tup), 0)::bigint                  AS live_tuples,
       COALESCE(sum(s.n_dead_tup), 0)::bigint                  AS dead_tuples,
       COALESCE(sum(pg_relation_size(s.relid)), 0)::bigint       AS table_bytes,
       COALESCE(sum(pg_total_relation_size(s.relid)), 0)::bigint AS total_bytes
FROM   pg_stat_user_tables AS s
WHERE  s.relid = $1::regclass
   OR  s.relid IN (SELECT relid FROM pg_partition_tree($1::regclass) WHERE isleaf)
