-- Size of each index of the queue table.
SELECT indexrelname::text, pg_relation_size(indexrelid)
FROM   pg_stat_user_indexes
WHERE  relid = $1::regclass
ORDER  BY indexrelname
