-- graphile_worker's own add_job, one job of the task `dbq_bench_job`: the harness's payload
-- is its payload; max_attempts is the first run and queue.max_retries more. graphile_worker
-- runs lower priority numbers first, the harness's scenarios higher ones: the priorities
-- are not passed.
SELECT (add_job('dbq_bench_job', :payload::json, max_attempts => :max_retries + 1)).id AS id
