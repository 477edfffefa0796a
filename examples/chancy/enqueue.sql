-- chancy's own push (Chancy.push's insert, then its `queue.pushed` notification), one job:
-- the harness's payload is the job's kwargs, with the harness's number as `dbq_job`;
-- max_attempts is the first run and queue.max_retries more.
WITH inserted AS (
  INSERT INTO chancy_jobs (id, queue, func, kwargs, priority, max_attempts)
  SELECT chancy_job_uuid(), 'dbq_bench', '__main__.dbq_bench_job',
         :payload::jsonb || jsonb_build_object('dbq_job', nextval('chancy_job_number')),
         :priority, :max_retries + 1
  RETURNING (kwargs->>'dbq_job')::bigint AS id
)
SELECT i.id
FROM   inserted i,
       (SELECT pg_notify('chancy_events', '{"t":"queue.pushed","q":"dbq_bench"}')) AS pushed
