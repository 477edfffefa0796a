-- pgqueuer's own enqueue, many jobs at once (one array element per job), ids in order.
WITH input AS (
  SELECT a, p, n FROM UNNEST(:payloads::text[], :priorities::int[]) WITH ORDINALITY AS j(a, p, n)
), inserted AS (
  INSERT INTO pgqueuer (priority, entrypoint, payload, execute_after, headers, status)
  SELECT p, 'dbq_bench', convert_to(a, 'UTF8'), now(), a::jsonb, 'queued'
  FROM   input ORDER BY n
  RETURNING id, entrypoint, priority
), logged AS (
  INSERT INTO pgqueuer_log (job_id, status, entrypoint, priority)
  SELECT id, 'queued', entrypoint, priority FROM inserted
)
SELECT id FROM inserted ORDER BY id
