-- dramatiq-pg's own enqueue, many messages at once (one array element per job), numbered in
-- order; one notification each, as dramatiq-pg sends.
WITH input AS (
  SELECT a, gen_random_uuid() AS id, nextval('dramatiq_job_number') AS number
  FROM  (SELECT a, n FROM UNNEST(:payloads::text[]) WITH ORDINALITY AS j(a, n) ORDER BY n) ordered
), enqueued AS (
  INSERT INTO dramatiq_queue (queue_name, message_id, "state", message)
  SELECT 'default', id, 'queued', jsonb_build_object(
           'queue_name', 'default',
           'actor_name', 'dbq_bench_job',
           'args', '[]'::jsonb,
           'kwargs', jsonb_build_object('payload', a::jsonb, 'dbq_job', number),
           'options', jsonb_build_object('max_retries', :max_retries),
           'message_id', id::text,
           'message_timestamp', (extract(epoch FROM clock_timestamp()) * 1000)::bigint)
  FROM   input ORDER BY number
  RETURNING queue_name, message
)
SELECT id FROM (
  SELECT (message->'kwargs'->>'dbq_job')::bigint AS id,
         pg_notify('dramatiq.' || queue_name || '.enqueue', message::text) AS notified
  FROM   enqueued
) AS sent
ORDER BY id
