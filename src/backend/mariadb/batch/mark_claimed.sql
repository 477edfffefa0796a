-- The batch claim's UPDATE (MariaDB). Binds: the locked ids as a JSON array. A join, not
-- `id IN (SELECT … FROM JSON_TABLE(…))`: MariaDB 10.x runs an IN subquery of a single-table
-- UPDATE once per row of the table, a scan; the join looks each id up by primary key.
UPDATE job_queue j
JOIN   JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$')) AS ids ON j.id = ids.id
SET    j.status = 'processing', j.started_at = NOW(6)
