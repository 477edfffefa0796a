-- In-doubt inserts of a declared design, looked up by the key in their payload.
SELECT id, payload->>'k' AS key
FROM   dbq_bench_job_state
WHERE  payload->>'k' = ANY($1::text[])
