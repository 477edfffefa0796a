-- The ticker's round (migrations/rotation): truncate finished partitions, then move on to
-- the next partition when the period $1 is up.
SELECT rotate_queue($1)
