"""The dbq-bench handler protocol (version 1) for a Python queue library's worker process.

dbq-bench starts the library's worker with DBQ_BENCH_SOCKET set; the glue connects once,
and each job's handler calls `handle`, which asks the harness what the scenario's handler
does for this run (how long it takes, and whether it succeeds, raises or crashes the
process) and reports the outcome. docs/libraries.md describes the wire format.

Two clients, one protocol: `Harness` for asyncio libraries (procrastinate, pgqueuer,
chancy), `BlockingHarness` for threaded ones (dramatiq: each worker thread calls `handle`
and blocks until its run is over). Both say hello with the library's name and the settings
that shape its figures: the DBQ_BENCH_* settings the glue read (through `setting`) and the
library's own that the glue passes (`settings={"prefetch": 1000}`), so that the results say
what ran.

Rules: nothing here decides an outcome (the harness does); a failure is raised as
`HandlerFailed` so that the library's own retry path runs; when the harness goes away, the
process exits, so that no worker outlives its run.
"""

import asyncio
import json
import os
import shlex
import signal
import socket
import threading
import time

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
    async def connect(cls, library, settings=None):
        """Says hello (naming `library`, e.g. "procrastinate 3.10.0", and the `settings` of
        the library's own the glue chose) and waits for the harness's welcome."""
        reader, writer = await asyncio.open_unix_connection(os.environ["DBQ_BENCH_SOCKET"])
        harness = cls(reader, writer)
        harness._send(hello(library, settings))
        line = await asyncio.wait_for(reader.readline(), WELCOME_TIMEOUT_S)
        check_welcome(line)
        asyncio.get_running_loop().create_task(harness._read_replies())
        return harness

    async def handle(self, job, payload, attempt=None, retrying=True):
        """Runs the scenario's handler for `job` (the library's id of it, which is the id the
        harness enqueued) with its `payload` (the harness's JSON object). `retrying`: whether
        the library will run the job again if this run fails. Returns on success; raises
        HandlerFailed on a failure; kills this process for a job that crashes its worker."""
        reply = asyncio.get_running_loop().create_future()
        # A second run of one job at once (a double delivery) waits for its own reply.
        self._waiting.setdefault(job, []).append(reply)
        self._send({"start": {"job": job, "attempt": attempt, "payload": payload}})
        run = await reply
        await asyncio.sleep(run["sleep_s"])
        end_run(self._send, job, run, retrying)

    def _send(self, message):
        self._writer.write((json.dumps(message) + "\n").encode())

    async def _read_replies(self):
        while True:
            line = await self._reader.readline()
            if not line:
                # The harness is gone: so is its run.
                os._exit(3)
            run = json.loads(line)["run"]
            waiting = self._waiting[run["job"]]
            reply = waiting.pop(0)
            if not waiting:
                del self._waiting[run["job"]]
            reply.set_result(run)


class BlockingHarness:
    """One worker process's connection to dbq-bench, for a library whose handlers run in
    threads: `handle` may be called from any thread, blocks for the handler's run, and
    returns, raises HandlerFailed or kills the process as `Harness.handle` does."""

    def __init__(self, sock):
        self._sock = sock
        self._send_lock = threading.Lock()
        self._lock = threading.Lock()
        self._waiting = {}

    @classmethod
    def connect(cls, library, settings=None):
        """Says hello and waits for the welcome, as `Harness.connect`; then reads the
        harness's replies on a daemon thread."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(os.environ["DBQ_BENCH_SOCKET"])
        harness = cls(sock)
        harness._send(hello(library, settings))
        sock.settimeout(WELCOME_TIMEOUT_S)
        harness._lines = sock.makefile("rb")
        check_welcome(harness._lines.readline())
        sock.settimeout(None)
        threading.Thread(target=harness._read_replies, name="dbq-bench", daemon=True).start()
        return harness

    def handle(self, job, payload, attempt=None, retrying=True):
        """As `Harness.handle`, blocking the calling thread."""
        reply = {"ready": threading.Event()}
        with self._lock:
            # One job runs once at a time in a well-behaved library; a second run of the
            # same job (a double delivery) waits its own turn for its own reply.
            self._waiting.setdefault(job, []).append(reply)
        self._send({"start": {"job": job, "attempt": attempt, "payload": payload}})
        reply["ready"].wait()
        run = reply["run"]
        time.sleep(run["sleep_s"])
        end_run(self._send, job, run, retrying)

    def _send(self, message):
        with self._send_lock:
            self._sock.sendall((json.dumps(message) + "\n").encode())

    def _read_replies(self):
        for line in self._lines:
            run = json.loads(line)["run"]
            with self._lock:
                waiting = self._waiting[run["job"]]
                reply = waiting.pop(0)
                if not waiting:
                    del self._waiting[run["job"]]
            reply["run"] = run
            reply["ready"].set()
        # The harness is gone: so is its run.
        os._exit(3)


def end_run(send, job, run, retrying):
    """Ends a handler run as the harness said, once its sleep is over: crash (SIGKILL this
    process), fail (report it, then raise HandlerFailed for the library's retry path) or
    done (report it and return)."""
    if run["then"] == "crash":
        os.kill(os.getpid(), signal.SIGKILL)
    if run["then"] == "fail":
        send({"fail": {"job": job, "retrying": retrying}})
        raise HandlerFailed(f"dbq-bench: job {job} fails this run")
    send({"done": {"job": job}})


# The DBQ_BENCH_* settings the glue read (through `setting`), as the harness passed them.
_read = {}


def hello(library, settings=None):
    """The hello line: the library, the DBQ_BENCH_* settings the glue read (what it passed
    on to the library), and the library's own `settings` the glue chose."""
    said = dict(_read)
    said.update(settings or {})
    return {"hello": {"protocol": PROTOCOL, "library": library, "settings": said}}


def check_welcome(line):
    welcome = json.loads(line) if line else None
    if welcome != {"welcome": {"protocol": PROTOCOL}}:
        raise RuntimeError(f"dbq-bench answered {welcome!r}, not a protocol {PROTOCOL} welcome")


def server_settings():
    """The settings libpq's PGOPTIONS carries (`-c search_path=…`, the run's schema), for a
    driver that does not read PGOPTIONS itself (asyncpg: `server_settings=`)."""
    words = shlex.split(os.environ.get("PGOPTIONS", ""))
    pairs = [w for flag, w in zip(words, words[1:]) if flag == "-c"]
    return dict(pair.split("=", 1) for pair in pairs)


def setting(name, default=None, kind=str):
    """A run setting the harness passes on (DBQ_BENCH_<NAME>), or `default`."""
    value = os.environ.get(f"DBQ_BENCH_{name}")
    if value is not None:
        _read[f"DBQ_BENCH_{name}"] = value
    return default if value is None else kind(value)
