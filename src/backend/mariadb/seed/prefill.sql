-- Bulk enqueue (MariaDB): one statement per batch. MariaDB has no arrays: the batch is one
-- bound JSON array of [type, payload, priority] rows, read with JSON_TABLE. Binds:
-- max_retries, the rows.
INSERT INTO job_queue (type, payload, priority, max_retries)
SELECT u.t, u.p, u.pr, ?
FROM   JSON_TABLE(?, '$[*]' COLUMNS (n  FOR ORDINALITY,
                                     t  VARCHAR(100) PATH '$[0]',
                                     p  LONGTEXT     PATH '$[1]',
                                     pr INT          PATH '$[2]')) AS u
ORDER  BY u.n
RETURNING id
