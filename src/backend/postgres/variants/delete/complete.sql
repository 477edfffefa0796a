-- Delete-on-complete: a finished job's row is deleted in the completing transaction, so it
-- becomes a dead tuple once (at the claim's update) instead of twice. Dead-lettered jobs keep
-- their row (the seed's failure update) for an operator.
DELETE FROM job_queue WHERE id = $1
