-- Accounting proof: how the given jobs of a declared design stand.
SELECT id, status, retry_count FROM dbq_bench_job_state WHERE id = ANY($1::bigint[])
