"""pgqueuer's own worker as one of dbq-bench's consumers: the glue around its entrypoint.

Started by dbq-bench in this directory with the run's server and schema in libpq's variables
(PGHOST, PGOPTIONS=-c search_path=…) and its settings in DBQ_BENCH_*. pgqueuer picks, runs,
retries and finishes the jobs; the entrypoint only asks the harness what to do.

Recovery is pgqueuer's and always on: a picked job whose heartbeat is older than
heartbeat_timeout is picked again by the next dequeue. The glue sets that threshold to the
scenario's reaper.stale_after when its reaper is enabled, and leaves pgqueuer's default (30 s)
when it is not. Retries: pgqueuer's DatabaseRetryEntrypointExecutor (max_retries retries,
exponential from backoff.base); a job whose retries ran out is logged `exception` and deleted.
"""

import asyncio
import os
import signal
import sys
from datetime import timedelta

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import dbq_bench  # noqa: E402
import asyncpg  # noqa: E402
import pgqueuer  # noqa: E402
from pgqueuer.executors import DatabaseRetryEntrypointExecutor  # noqa: E402

MAX_RETRIES = dbq_bench.setting("MAX_RETRIES", 3, int)
BACKOFF_S = dbq_bench.setting("BACKOFF_BASE_S", 1.0, float)
STALE_AFTER_S = dbq_bench.setting("STALE_AFTER_S", None, float)
CONCURRENCY = dbq_bench.setting("CONCURRENCY", 2, int)
POLL_INTERVAL_S = dbq_bench.setting("POLL_INTERVAL_S", 5.0, float)
BATCH = 1


def retrying_executor(parameters):
    # pgqueuer runs a failed job again while its attempts (retries so far) < max_attempts.
    return DatabaseRetryEntrypointExecutor(
        parameters=parameters,
        max_attempts=MAX_RETRIES,
        initial_delay=timedelta(seconds=BACKOFF_S),
    )


async def main():
    harness = await dbq_bench.Harness.connect(
        f"pgqueuer {pgqueuer.__version__}",
        settings={
            "driver": "asyncpg",
            "batch_size": BATCH,
            "max_concurrent_tasks": max(CONCURRENCY, 2 * BATCH),
            "heartbeat_timeout_s": STALE_AFTER_S or 30.0,
        },
    )
    # asyncpg, pgqueuer's first driver: the server from libpq's variables (PGHOST, …), the
    # run's schema from PGOPTIONS. (With psycopg, pgqueuer's notification watcher holds the
    # connection up to 1 s at a time, delaying heartbeats and outcomes by as much.)
    connection = await asyncpg.connect(server_settings=dbq_bench.server_settings())
    queue = pgqueuer.PgQueuer.from_asyncpg_connection(connection)

    @queue.entrypoint("dbq_bench", executor_factory=retrying_executor)
    async def dbq_bench_job(job):
        await harness.handle(
            job.id,
            job.headers,
            attempt=job.attempts + 1,
            retrying=job.attempts < MAX_RETRIES,
        )

    # SIGTERM (the harness stopping the run) ends the loop as pgqueuer's own CLI does: the
    # running jobs finish and their outcomes are written before the process exits.
    for stop in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(stop, queue.shutdown.set)
    await queue.run(
        dequeue_timeout=timedelta(seconds=POLL_INTERVAL_S),
        batch_size=BATCH,
        max_concurrent_tasks=max(CONCURRENCY, 2 * BATCH),
        heartbeat_timeout=timedelta(seconds=STALE_AFTER_S or 30.0),
    )


if __name__ == "__main__":
    asyncio.run(main())
