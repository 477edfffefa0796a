-- The queue table's tuple counts, maintenance counters and sizes.
SELECT COALESCE(n_live_tup, 0)                    AS live_tuples,
       COALESCE(n_dead_tup, 0)                    AS dead_tuples,
       COALESCE(vacuum_count, 0)                  AS vacuums,
       COALESCE(autovacuum_count, 0)              AS autovacuums,
       COALESCE(analyze_count, 0)                 AS analyzes,
       COALESCE(autoanalyze_count, 0)             AS autoanalyzes,
       pg_relation_size($1::regclass)       AS table_bytes,
       pg_total_relation_size($1::regclass) AS total_bytes
FROM   pg_stat_user_tables
WHERE  relid = $1::regclass
