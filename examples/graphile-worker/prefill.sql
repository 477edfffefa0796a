-- graphile_worker's own add_job, many jobs at once (one array element per job), in order.
SELECT (add_job('dbq_bench_job', a::json, max_attempts => :max_retries + 1)).id AS id
FROM   UNNEST(:payloads::text[]) WITH ORDINALITY AS j(a, n)
ORDER  BY n
