-- Delete-on-complete (MariaDB): the finished job's row is deleted in the completing
-- transaction; dead-lettered jobs keep theirs. Binds: id.
DELETE FROM job_queue WHERE id = ?
