-- dramatiq-pg's own enqueue (PostgresBroker.enqueue's upsert and its notification), one
-- message to the actor `dbq_bench_job` on the queue `default`: the harness's payload and its
-- number (`dbq_job`) are the actor's keyword arguments; max_retries is the message's own
-- option. Dramatiq has no per-message priority (an actor's priority orders only the messages
-- one worker process holds), so the scenario's priorities are not passed.
WITH message AS (
  SELECT id, jsonb_build_object(
           'queue_name', 'default',
           'actor_name', 'dbq_bench_job',
           'args', '[]'::jsonb,
           'kwargs', jsonb_build_object('payload', :payload::jsonb,
                                        'dbq_job', nextval('dramatiq_job_number')),
           'options', jsonb_build_object('max_retries', :max_retries),
           'message_id', id::text,
           'message_timestamp', (extract(epoch FROM clock_timestamp()) * 1000)::bigint
         ) AS body
  FROM   (SELECT gen_random_uuid() AS id) AS new
), enqueued AS (
  INSERT INTO dramatiq_queue (queue_name, message_id, "state", message)
  SELECT 'default', id, 'queued', body FROM message
  RETURNING queue_name, message
)
SELECT id FROM (
  SELECT (message->'kwargs'->>'dbq_job')::bigint AS id,
         pg_notify('dramatiq.' || queue_name || '.enqueue', message::text) AS notified
  FROM   enqueued
) AS sent
