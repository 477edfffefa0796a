"""Dramatiq's own worker, on dramatiq-pg's broker, as one of dbq-bench's consumers: the glue
around its actor.

Started by dbq-bench in this directory with the run's server and schema in libpq's variables
(PGHOST, PGOPTIONS=-c search_path=…) and its settings in DBQ_BENCH_*. Dramatiq consumes,
runs, retries and finishes the messages; the actor only asks the harness what to do.

Dramatiq runs actors in threads, so the glue uses the protocol's blocking client. Retries:
Dramatiq's Retries middleware (max_retries from each message's options, an exponential
back-off from queue.backoff.base); a message whose retries ran out is rejected (its dead
letter). Recovery: dramatiq-pg has no stalled-message threshold. A message a killed worker
had consumed keeps the state `consumed`; its advisory lock died with the worker's
connection, and the next worker process to start (the harness starts one again after
consumers.restart_after) reads every queued or consumed message and takes it.

Throughput knobs, recorded in the hello: Dramatiq prefetches twice its worker threads per
process by default; DRAMATIQ_PG_PREFETCH in dbq-bench's environment sets it (dramatiq's own
`dramatiq_queue_prefetch` variable).
"""

import os
import signal
import sys
import threading
from importlib.metadata import version

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import dbq_bench  # noqa: E402

THREADS = dbq_bench.setting("CONCURRENCY", 1, int)
PREFETCH = int(os.environ.get("DRAMATIQ_PG_PREFETCH", 2 * THREADS))
# Dramatiq reads its prefetch from the environment when its modules load.
os.environ["dramatiq_queue_prefetch"] = str(PREFETCH)

import dramatiq  # noqa: E402
from dramatiq.middleware import CurrentMessage  # noqa: E402
from dramatiq.middleware.prometheus import Prometheus  # noqa: E402
from dramatiq_pg import PostgresBroker  # noqa: E402

MAX_RETRIES = dbq_bench.setting("MAX_RETRIES", 3, int)
BACKOFF_MS = max(1, int(dbq_bench.setting("BACKOFF_BASE_S", 0.1, float) * 1000))
# How long a consumer waits for a notification before it looks again (Dramatiq's
# worker_timeout, in whole seconds for dramatiq-pg).
POLL_MS = max(1000, int(dbq_bench.setting("POLL_INTERVAL_S", 1.0, float) * 1000))
SCHEMA = dbq_bench.server_settings()["search_path"]

# The connection comes from libpq's environment variables (url ""); no result backend.
broker = PostgresBroker(url="", schema=SCHEMA, prefix="dramatiq_", results=False)
# Prometheus (a default middleware) serves metrics on one port per machine: four worker
# processes would fight over it.
for middleware in [m for m in broker.middleware if isinstance(m, Prometheus)]:
    broker.middleware.remove(middleware)
broker.add_middleware(CurrentMessage())
dramatiq.set_broker(broker)
harness = None


@dramatiq.actor(
    actor_name="dbq_bench_job",
    queue_name="default",
    max_retries=MAX_RETRIES,
    min_backoff=BACKOFF_MS,
    max_backoff=BACKOFF_MS * 2**MAX_RETRIES,
)
def dbq_bench_job(payload, dbq_job):
    message = CurrentMessage.get_current_message()
    retries = message.options.get("retries", 0)
    max_retries = message.options.get("max_retries", MAX_RETRIES)
    harness.handle(dbq_job, payload, attempt=retries + 1, retrying=retries < max_retries)


def main():
    global harness
    harness = dbq_bench.BlockingHarness.connect(
        f"dramatiq-pg {version('dramatiq-pg')} (dramatiq {version('dramatiq')})",
        settings={"prefetch": PREFETCH, "worker_threads": THREADS, "worker_timeout_ms": POLL_MS},
    )
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    worker = dramatiq.Worker(broker, worker_threads=THREADS, worker_timeout=POLL_MS)
    worker.start()
    stopping.wait()
    # As Dramatiq's own CLI stops: the jobs in hand finish and are acknowledged first.
    worker.stop(timeout=10_000)
    broker.close()


if __name__ == "__main__":
    main()
