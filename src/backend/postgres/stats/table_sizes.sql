-- Size and tuple counts of the queue table (statistics collector counts and on-disk sizes).
SELECT COALESCE(n_live_tup, 0)                    AS live_tuples,
       COALESCE(n_dead_tup, 0)                    AS dead_tuples,
       pg_relation_size($1::regclass)       AS table_bytes,
       pg_total_relation_size($1::regclass) AS total_bytes
FROM   pg_stat_user_tables
WHERE  relid = $1::regclass
