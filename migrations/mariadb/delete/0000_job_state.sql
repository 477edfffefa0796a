-- Each job's status in the proof's words, for the proof statements the delete-like designs
-- share (src/backend/mariadb/delete/): here the status column itself. A design without one
-- derives it in a view of the same name (migrations/mariadb/visibility_timeout).
CREATE VIEW job_state AS
SELECT id, status, retry_count, payload FROM job_queue;
