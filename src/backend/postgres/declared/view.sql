-- A design that declares its state model (design.toml): each job as the proof reads it, in
-- the harness's words. A state the declaration does not name shows as itself, which the
-- proof then refuses as an unknown status word.
CREATE VIEW dbq_bench_job_state AS
SELECT id,
       (CASE WHEN {state} IN ({done})        THEN 'done'
             WHEN {state} IN ({dead_letter}) THEN 'dead_letter'
             WHEN {state} IN ({in_flight})   THEN 'processing'
             WHEN {state} IN ({waiting})     THEN 'pending'
             ELSE {state}::text
        END)::varchar   AS status,
       {failures}::int AS retry_count,
       {payload}::jsonb AS payload
FROM   {table}
