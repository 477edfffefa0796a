-- In-doubt inserts, looked up by the key in their payload: in pgqueuer's table, or, once it
-- deleted them, in the keys schema.sql keeps.
SELECT id, headers->>'k' AS key FROM pgqueuer WHERE headers->>'k' = ANY($1::text[])
UNION
SELECT job_id, job_key FROM pgqueuer_removed_key WHERE job_key = ANY($1::text[])
