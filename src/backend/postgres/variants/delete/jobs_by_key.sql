-- Jobs whose payload key is one of $1, in the table or, once deleted on completion, in the
-- completion audit (resolves inserts whose commit outcome was unknown).
SELECT id, payload->>'k' AS key FROM job_state WHERE payload->>'k' = ANY($1::text[])
UNION
SELECT job_id, job_key FROM dbq_bench_completion_audit WHERE job_key = ANY($1::text[])
