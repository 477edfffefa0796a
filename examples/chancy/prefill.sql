-- chancy's own push, many jobs at once (one array element per job), numbered in order.
WITH input AS (
  SELECT a, p, nextval('chancy_job_number') AS number
  FROM  (SELECT a, p, n FROM UNNEST(:payloads::text[], :priorities::int[]) WITH ORDINALITY AS j(a, p, n)
         ORDER BY n) ordered
), inserted AS (
  INSERT INTO chancy_jobs (id, queue, func, kwargs, priority, max_attempts)
  SELECT chancy_job_uuid(), 'dbq_bench', '__main__.dbq_bench_job',
         a::jsonb || jsonb_build_object('dbq_job', number), p, :max_retries + 1
  FROM   input ORDER BY number
  RETURNING (kwargs->>'dbq_job')::bigint AS id
)
SELECT id FROM inserted ORDER BY id
