"""toyqueue's worker: a queue library of a few lines for the tests, threaded (it uses the
protocol's blocking client). One job at a time: claim the oldest due job with SKIP LOCKED,
run it through the harness, record done, or a failure (back to queued after the back-off,
or dead once its attempts ran out).

TOYQUEUE_MISBEHAVES, once, in slot 0's process, on its first job:
- `twice`: runs the job a second time, the same attempt, with no fault (a library whose
  lock is released before its acknowledgement commits);
- `unrecorded`: records nothing after the handler's success and puts the job back in the
  queue for tomorrow (a library whose acknowledgement matched no row).
"""

import os
import signal
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples", "python"))

import dbq_bench  # noqa: E402
import psycopg  # noqa: E402

POLL_S = dbq_bench.setting("POLL_INTERVAL_S", 0.1, float)
BACKOFF_S = dbq_bench.setting("BACKOFF_BASE_S", 0.1, float)
MISBEHAVES = os.environ.get("TOYQUEUE_MISBEHAVES") if os.environ.get("DBQ_BENCH_SLOT") == "0" else None

CLAIM = """
UPDATE toy_jobs SET state = 'running'
WHERE  id = (SELECT id FROM toy_jobs WHERE state = 'queued' AND run_at <= now()
             ORDER BY run_at, id FOR UPDATE SKIP LOCKED LIMIT 1)
RETURNING id, payload, attempts, max_attempts
"""
FAILED = """
UPDATE toy_jobs
SET    attempts = attempts + 1,
       state = CASE WHEN attempts + 1 >= max_attempts THEN 'dead' ELSE 'queued' END,
       run_at = now() + make_interval(secs => %s)
WHERE  id = %s
"""


def main():
    harness = dbq_bench.BlockingHarness.connect(
        "toyqueue 0", settings={"misbehaves": MISBEHAVES or "no"}
    )
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    # The server and the run's schema from libpq's variables.
    conn = psycopg.connect("", autocommit=True)
    misbehave = MISBEHAVES
    while not stopping.is_set():
        row = conn.execute(CLAIM).fetchone()
        if row is None:
            stopping.wait(POLL_S)
            continue
        job, payload, attempts, max_attempts = row
        run = dict(attempt=attempts + 1, retrying=attempts + 1 < max_attempts)
        try:
            harness.handle(job, payload, **run)
            if misbehave == "twice":
                harness.handle(job, payload, **run)
            if misbehave == "unrecorded":
                misbehave = None
                conn.execute("UPDATE toy_jobs SET state = 'queued', run_at = now() + interval '1 day' WHERE id = %s", (job,))
                continue
            misbehave = None
            conn.execute("UPDATE toy_jobs SET state = 'done' WHERE id = %s", (job,))
        except dbq_bench.HandlerFailed:
            misbehave = None
            conn.execute(FAILED, (BACKOFF_S, job))


if __name__ == "__main__":
    main()
