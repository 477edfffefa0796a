-- Move-to-archive (MariaDB): the finished job leaves the hot table for job_queue_archive in
-- the completing transaction (migrations/mariadb/archive: the procedure's two statements).
-- Binds: id.
CALL archive_job(?)
