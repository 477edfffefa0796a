"""chancy's own worker as one of dbq-bench's consumers: the glue around its job function.

Started by dbq-bench in this directory with the run's server and schema in libpq's variables
(PGHOST, PGOPTIONS=-c search_path=…) and its settings in DBQ_BENCH_*. chancy fetches, runs,
retries and finishes the jobs; the job function only asks the harness what to do.

The queue `dbq_bench` runs jobs in the worker's event loop (AsyncExecutor) so that the
function shares this process's connection to the harness. Retries: max_attempts is set at
push (1 + queue.max_retries); chancy puts a failed job back as `retrying` at once. Recovery:
chancy's Recovery plugin, on the elected leader, returns `running` jobs whose worker has not
been seen for heartbeat_timeout to `pending`; the glue polls it every second with the
scenario's reaper.stale_after as that timeout (at least 3 s: chancy beats in whole seconds)
when its reaper is enabled (chancy's defaults, 90 s and a 60 s poll, when it is not).
"""

import asyncio
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import dbq_bench  # noqa: E402
from chancy import Chancy, Queue, QueuedJob, Worker  # noqa: E402
from chancy.plugins.leadership import Leadership  # noqa: E402
from chancy.plugins.recovery import Recovery  # noqa: E402
from importlib.metadata import version  # noqa: E402

STALE_AFTER_S = dbq_bench.setting("STALE_AFTER_S", None, float)
# chancy's eager_polling: fetch again as soon as a job finishes. chancy's default (off) waits
# for the next poll or push notification, so with a backlog and no new pushes a worker of
# concurrency 1 runs one job per polling interval; CHANCY_EAGER_POLLING=0 measures that.
EAGER_POLLING = os.environ.get("CHANCY_EAGER_POLLING", "1") != "0"
CONCURRENCY = dbq_bench.setting("CONCURRENCY", 1, int)
# chancy polls in whole seconds; pushes also wake it (queue.pushed).
POLLING_INTERVAL_S = max(1, math.ceil(dbq_bench.setting("POLL_INTERVAL_S", 1.0, float)))
# chancy beats in whole seconds: a threshold under three beats would take live workers for
# dead (seen: a 1 s threshold with 1 s beats ran live workers' jobs again), so it is at
# least 3 s.
STALE_S = max(3, math.ceil(STALE_AFTER_S)) if STALE_AFTER_S else 90
harness = None


async def dbq_bench_job(*, queued: QueuedJob, **payload):
    # attempts counts finished runs: this is run attempts + 1 of max_attempts.
    await harness.handle(
        payload["dbq_job"],
        payload,
        attempt=queued.attempts + 1,
        retrying=queued.attempts + 1 < queued.max_attempts,
    )


def plugins():
    """chancy's default plugins; with the reaper on, recovery checked every second."""
    if STALE_AFTER_S is None:
        return None
    return [Leadership(poll_interval=1, timeout=2), Recovery(poll_interval=1)]


async def main():
    global harness
    harness = await dbq_bench.Harness.connect(
        f"chancy {version('chancy')}",
        settings={
            "executor": "AsyncExecutor",
            "eager_polling": EAGER_POLLING,
            "polling_interval_s": POLLING_INTERVAL_S,
            "heartbeat_timeout_s": STALE_S,
            "recovery_poll_s": 1 if STALE_AFTER_S else 60,
        },
    )
    # The connection comes from libpq's environment variables (conninfo "").
    async with Chancy("", plugins=plugins()) as app:
        await app.declare(
            Queue(
                "dbq_bench",
                concurrency=CONCURRENCY,
                executor="chancy.executors.asyncex.AsyncExecutor",
                polling_interval=POLLING_INTERVAL_S,
                eager_polling=EAGER_POLLING,
            ),
            upsert=True,
        )
        async with Worker(
            app,
            heartbeat_poll_interval=max(1, STALE_S // 3),
            heartbeat_timeout=STALE_S,
        ) as worker:
            await worker.wait_for_shutdown()


if __name__ == "__main__":
    asyncio.run(main())
