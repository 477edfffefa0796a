-- Rows (the statistics collector's estimate) and size with indexes of one of the design's
-- other tables (an archive, kept dead letters).
SELECT COALESCE(n_live_tup, 0)::bigint AS rows, pg_total_relation_size(relid)::bigint AS bytes
FROM   pg_stat_user_tables
WHERE  relid = $1::regclass
