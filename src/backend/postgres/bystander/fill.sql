-- Its rows: ids 1 to $1.
INSERT INTO bystander (id, note)
SELECT g, md5(g::text)
FROM   generate_series(1, $1::bigint) AS g
