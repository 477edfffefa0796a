-- Enqueue one job (MariaDB): the seed's insert. Binds: type, payload (JSON text), priority,
-- max_retries. MariaDB has INSERT … RETURNING (10.5+).
INSERT INTO job_queue (type, payload, priority, max_retries)
VALUES (?, ?, ?, ?)
RETURNING id
