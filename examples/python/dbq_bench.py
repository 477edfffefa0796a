"""The dbq-bench handler protocol (version 1) for a Python queue library's worker process.

dbq-bench starts the library's worker with DBQ_BENCH_SOCKET set; the glue connects once,
and each job's handler calls `Harness.handle`, which asks the harness what the scenario's
handler does for this run (how long it takes, and whether it succeeds, raises or crashes the
process) and reports the outcome. docs/libraries.md describes the wire format.

Rules: nothing here decides an outcome (the harness does); a failure is raised as
`HandlerFailed` so that the library's own retry path runs; when the harness goes away, the
process exits, so that no worker outlives its run.
"""

import asyncio
import json
import os
import shlex
import signal

PROTOCOL = 1
# How long the glue waits for the harness's welcome (the harness's own connect_timeout bounds
# the hello; this bounds the answer, so that a worker never waits on a harness that hung).
WELCOME_TIMEOUT_S = 30


class HandlerFailed(Exception):
    """The scenario's handler failed this run: the library should retry or give up."""


class Harness:
    """One worker process's connection to dbq-bench."""

    def __init__(self, reader, writer):
        self._reader = reader
        self._writer = writer
        self._waiting = {}

    @classmethod
    async def connect(cls, library):
        """Says hello (naming `library`, e.g. "procrastinate 3.10.0") and waits for the
        harness's welcome."""
        reader, writer = await asyncio.open_unix_connection(os.environ["DBQ_BENCH_SOCKET"])
        harness = cls(reader, writer)
        harness._send({"hello": {"protocol": PROTOCOL, "library": library}})
        line = await asyncio.wait_for(reader.readline(), WELCOME_TIMEOUT_S)
        welcome = json.loads(line) if line else None
        if welcome != {"welcome": {"protocol": PROTOCOL}}:
            raise RuntimeError(f"dbq-bench answered {welcome!r}, not a protocol {PROTOCOL} welcome")
        asyncio.get_running_loop().create_task(harness._read_replies())
        return harness

    async def handle(self, job, payload, attempt=None, retrying=True):
        """Runs the scenario's handler for `job` (the library's id of it, which is the id the
        harness enqueued) with its `payload` (the harness's JSON object). `retrying`: whether
        the library will run the job again if this run fails. Returns on success; raises
        HandlerFailed on a failure; kills this process for a job that crashes its worker."""
        reply = asyncio.get_running_loop().create_future()
        self._waiting[job] = reply
        self._send({"start": {"job": job, "attempt": attempt, "payload": payload}})
        run = await reply
        await asyncio.sleep(run["sleep_s"])
        if run["then"] == "crash":
            os.kill(os.getpid(), signal.SIGKILL)
        if run["then"] == "fail":
            self._send({"fail": {"job": job, "retrying": retrying}})
            raise HandlerFailed(f"dbq-bench: job {job} fails this run")
        self._send({"done": {"job": job}})

    def _send(self, message):
        self._writer.write((json.dumps(message) + "\n").encode())

    async def _read_replies(self):
        while True:
            line = await self._reader.readline()
            if not line:
                # The harness is gone: so is its run.
                os._exit(3)
            run = json.loads(line)["run"]
            self._waiting.pop(run["job"]).set_result(run)


def server_settings():
    """The settings libpq's PGOPTIONS carries (`-c search_path=…`, the run's schema), for a
    driver that does not read PGOPTIONS itself (asyncpg: `server_settings=`)."""
    words = shlex.split(os.environ.get("PGOPTIONS", ""))
    pairs = [w for flag, w in zip(words, words[1:]) if flag == "-c"]
    return dict(pair.split("=", 1) for pair in pairs)


def setting(name, default=None, kind=str):
    """A run setting the harness passes on (DBQ_BENCH_<NAME>), or `default`."""
    value = os.environ.get(f"DBQ_BENCH_{name}")
    return default if value is None else kind(value)
