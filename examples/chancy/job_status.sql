-- Accounting proof: how the given jobs stand, by the harness's number (no attempt count:
-- design.toml's counts = "claims").
SELECT id, status, NULL::int AS retry_count FROM chancy_job_state WHERE id = ANY($1::bigint[])
