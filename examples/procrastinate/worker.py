"""procrastinate's own worker as one of dbq-bench's consumers: the glue around its handler.

Started by dbq-bench in this directory with the run's server and schema in libpq's variables
(PGHOST, PGOPTIONS=-c search_path=…) and its settings in DBQ_BENCH_*. procrastinate fetches,
runs, retries and finishes the jobs; the handler only asks the harness what to do.

Recovery is procrastinate's: a worker whose heartbeat stops is pruned, and, when the scenario
enables its reaper (reaper.stale_after), this process also runs procrastinate's documented
stalled-job retry (JobManager.get_stalled_jobs, then retry_job) every second, as a periodic
task would; with the reaper off, a killed worker's job stays in `doing`.
"""

import asyncio
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import dbq_bench  # noqa: E402
import procrastinate  # noqa: E402

MAX_RETRIES = dbq_bench.setting("MAX_RETRIES", 3, int)
BACKOFF_S = dbq_bench.setting("BACKOFF_BASE_S", 1.0, float)
STALE_AFTER_S = dbq_bench.setting("STALE_AFTER_S", None, float)
CONCURRENCY = dbq_bench.setting("CONCURRENCY", 1, int)
POLL_INTERVAL_S = dbq_bench.setting("POLL_INTERVAL_S", 5.0, float)
HEARTBEAT_S = min(10.0, STALE_AFTER_S / 3) if STALE_AFTER_S else 10.0

# The connection comes from libpq's environment variables (conninfo "").
app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=""))
harness = None


@app.task(
    name="dbq_bench",
    pass_context=True,
    # procrastinate runs a job again while attempts < max_attempts: max_retries retries,
    # each after queue.backoff.base (its exponential wait has no base to scale; 0 means
    # "retry forever" to it, so no retries is retry=False).
    retry=MAX_RETRIES > 0 and procrastinate.RetryStrategy(max_attempts=MAX_RETRIES, wait=BACKOFF_S),
)
async def dbq_bench_job(context, **payload):
    job = context.job
    await harness.handle(
        job.id, payload, attempt=job.attempts + 1, retrying=job.attempts < MAX_RETRIES
    )


async def retry_stalled_jobs():
    """procrastinate's documented rescue of jobs whose worker stopped beating."""
    while True:
        await asyncio.sleep(1)
        stalled = await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=STALE_AFTER_S)
        for job in stalled:
            await app.job_manager.retry_job(job)


async def main():
    global harness
    harness = await dbq_bench.Harness.connect(
        f"procrastinate {procrastinate.__version__}",
        settings={
            "update_heartbeat_interval_s": HEARTBEAT_S,
            "stalled_worker_timeout_s": STALE_AFTER_S or 30.0,
            "stalled_job_retry": STALE_AFTER_S is not None,
        },
    )
    async with app.open_async():
        if STALE_AFTER_S is not None:
            asyncio.get_running_loop().create_task(retry_stalled_jobs())
        await app.run_worker_async(
            concurrency=CONCURRENCY,
            fetch_job_polling_interval=POLL_INTERVAL_S,
            update_heartbeat_interval=HEARTBEAT_S,
            stalled_worker_timeout=STALE_AFTER_S or 30.0,
            install_signal_handlers=True,
        )


if __name__ == "__main__":
    asyncio.run(main())
