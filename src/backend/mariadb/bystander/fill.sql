-- Its rows: ids 1 to ?.
INSERT INTO bystander (id, note)
WITH RECURSIVE ids (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM ids WHERE n < ?)
SELECT n, MD5(n) FROM ids
