-- procrastinate's own defer function, many jobs at once (one array element per job).
SELECT unnest(procrastinate_defer_jobs_v1(ARRAY(
         SELECT ROW('default', 'dbq_bench', p, NULL, NULL, a::jsonb, NULL)::procrastinate_job_to_defer_v1
         FROM   UNNEST(:payloads::text[], :priorities::int[]) WITH ORDINALITY AS j(a, p, n)
         ORDER  BY n
       ))) AS id
