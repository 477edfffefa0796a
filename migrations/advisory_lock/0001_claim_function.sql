-- The advisory_lock design's claim (modelled on Que): walk the pending jobs in the queue's
-- order with a recursive CTE, taking pg_try_advisory_xact_lock on each until one is free.
-- Claiming writes no row: the lock marks the job as taken, and the transaction's end (the
-- completion's DELETE committing, or a crash rolling it back) releases it. A job another
-- worker finished between this statement's snapshot and the lock is passed over by a second,
-- fresh look at the row (the CTE's snapshot still shows it pending).
CREATE FUNCTION claim_advisory() RETURNS TABLE (id bigint, type varchar, payload jsonb)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  queue int := 'job_queue'::regclass::oid::int;
  locked_id bigint;
BEGIN
  FOR attempt IN 1..10 LOOP
  locked_id := NULL;
  WITH RECURSIVE candidate AS (
    (SELECT (j).id, (j).priority, (j).next_run_at,
            pg_try_advisory_xact_lock(queue, (j).id::int) AS locked
     FROM (SELECT j FROM job_queue AS j
           WHERE j.status = 'pending' AND j.next_run_at <= NOW()
           ORDER BY j.priority DESC, j.next_run_at, j.id
           LIMIT 1) AS first)
    UNION ALL
    (SELECT (j).id, (j).priority, (j).next_run_at,
            pg_try_advisory_xact_lock(queue, (j).id::int) AS locked
     FROM (SELECT (SELECT j FROM job_queue AS j
                   WHERE j.status = 'pending' AND j.next_run_at <= NOW()
                     AND (j.priority < c.priority
                          OR (j.priority = c.priority
                              AND (j.next_run_at, j.id) > (c.next_run_at, c.id)))
                   ORDER BY j.priority DESC, j.next_run_at, j.id
                   LIMIT 1) AS j
           FROM candidate AS c
           WHERE NOT c.locked
           LIMIT 1) AS next
     WHERE (j).id IS NOT NULL)
  )
  SELECT candidate.id INTO locked_id FROM candidate WHERE locked LIMIT 1;
  IF locked_id IS NULL THEN
    RETURN;
  END IF;
  RETURN QUERY
    SELECT j.id, j.type, j.payload FROM job_queue AS j
    WHERE j.id = locked_id AND j.status = 'pending';
  IF FOUND THEN
    RETURN;
  END IF;
  END LOOP;
END
$$;
