-- Queue depth: jobs waiting (ready or backing off). Answered from the partial index.
SELECT count(*) FROM job_queue WHERE status = 'pending'
