-- Where each job is, as the proof reads it: the designs that delete finished jobs read the
-- row's status from this view, the finished ones from the completion audit. A design
-- without a status column (visibility_timeout) derives the same columns in a view of the
-- same name, so the proof's statements serve both.
CREATE VIEW job_state AS
SELECT id, status, retry_count, payload FROM job_queue;
