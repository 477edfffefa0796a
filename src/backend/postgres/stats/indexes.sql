-- Size of each index of the queue table; for a partitioned table, each of its indexes summed
-- over the partitions' indexes that make it up (pg_partition_tree has no rows for a table
-- that is not partitioned).
SELECT COALESCE(p.relname, i.indexrelname)::text AS index_name,
       sum(pg_relation_size(i.indexrelid))::bigint
FROM   pg_stat_user_indexes AS i
LEFT   JOIN pg_inherits AS h ON h.inhrelid = i.indexrelid
LEFT   JOIN pg_class AS p ON p.oid = h.inhparent
WHERE  i.relid = $1::regclass
   OR  i.relid IN (SELECT relid FROM pg_partition_tree($1::regclass) WHERE isleaf)
GROUP  BY 1
ORDER  BY 1
