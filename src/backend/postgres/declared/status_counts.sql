-- Jobs by status, in the harness's words, of a declared design.
SELECT status, count(*) FROM dbq_bench_job_state GROUP BY status
