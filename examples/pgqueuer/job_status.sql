-- Accounting proof: how the given jobs stand, in pgqueuer's table or log (no attempt count:
-- design.toml's counts = "claims").
SELECT id, status, NULL::int AS retry_count FROM pgqueuer_job_state WHERE id = ANY($1::bigint[])
