//! What fleets, the reaper and fault injectors report. Every timestamp is µs on the run
//! clock (`clock::RunClock`); they only stamp and send, the recorder decides what each event
//! means for the figures.

use super::harness::HarnessSample;
use crate::backend::{ClaimProbe, DbSample, JobStatus, TableStats};
use serde::{Deserialize, Serialize};

pub use crate::backend::JobId;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Event {
    /// A producer's insert committed. In open loop `intended_us` is the scheduled time; in
    /// closed loop it equals `sent_us`.
    Enqueued {
        job: JobId,
        intended_us: u64,
        sent_us: u64,
        committed_us: u64,
        open_loop: bool,
        /// A poison job (its handler always fails) or a crashing one.
        poison: bool,
        crash: bool,
        /// Open loop: every producer connection the fleet may have was busy when it was due.
        behind: bool,
    },
    /// A prefill batch committed: its ids as runs of consecutive ids (a bulk insert's ids
    /// almost always are one run), so a prefill of millions waits in little memory.
    Prefilled {
        runs: Vec<(JobId, u32)>,
        poison: u64,
        crash: u64,
        sent_us: u64,
        committed_us: u64,
    },
    /// A permanent database error (data, constraint, syntax, permission, undefined object):
    /// retrying cannot help, so the run stops. `role` is who met it and doing what.
    Fatal {
        at_us: u64,
        role: String,
        error: String,
    },
    /// The producer fleet's connections (opened so far) and the most inserts under way at
    /// once in the current phase, reported when either grows.
    ProducerPool {
        at_us: u64,
        connections: u32,
        in_flight: u32,
    },
    /// A bystander's statement answered (`ok`) or failed.
    Bystander {
        intended_us: u64,
        done_us: u64,
        ok: bool,
    },
    /// Jobs a producer's schedule still held when their phase ended (the first due at
    /// `intended_us`): never sent, as k6 counts dropped iterations.
    Dropped { intended_us: u64, count: u64 },
    /// A producer's insert failed before it could commit; `retrying` says whether the same
    /// job is tried again.
    EnqueueFailed {
        at_us: u64,
        error: String,
        retrying: bool,
    },
    /// The connection broke while an insert (or its commit) was under way: the job may or may
    /// not exist. Resolved later by looking its key up in the table.
    EnqueueInDoubt {
        at_us: u64,
        key: String,
        error: String,
    },
    /// An outbox business transaction rolled back; the job with this key must never exist.
    EnqueueRolledBack { at_us: u64, key: String },
    /// A claim returned a job. `intended_us` comes from the job's payload. `first`: the first
    /// job of its claim statement's rows (a batch claim returns several), so claim
    /// statements can be counted.
    Claimed {
        job: JobId,
        intended_us: Option<u64>,
        /// When the claim statement started; `None` when the claim is not the harness's to
        /// time (a library's own worker reports only that it started the job).
        started_us: Option<u64>,
        claimed_us: u64,
        #[serde(default = "first_of_its_claim")]
        first: bool,
        /// The library's attempt number for this run, when its worker reports one: a start
        /// of an attempt already started is a repeated run, whatever its outcome.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attempt: Option<u32>,
    },
    /// A claim found no ready job. `busy_us`: the worker's time on that claim (statement and
    /// the transaction's end), before it went idle.
    EmptyPoll {
        at_us: u64,
        #[serde(default)]
        busy_us: u64,
    },
    /// A job's `done` update committed.
    Completed {
        job: JobId,
        intended_us: Option<u64>,
        handler_us: u64,
        committed_us: u64,
        /// The worker's busy time since its last report (its claim statement, handlers and
        /// outcome statements): a step's reports add up to the step, so the recorder can tell
        /// how much of its time a worker spent working rather than idle. A library's worker
        /// reports its handler's time only (its claim is the library's).
        #[serde(default)]
        busy_us: u64,
    },
    /// A worker's completion (or failure update) finished nothing: the job was no longer its
    /// (reaped, and maybe run or finished by another worker since), and the design refused
    /// the stale outcome. Not a completion, not a failure.
    Stale {
        job: JobId,
        at_us: u64,
        handler_us: u64,
        failure: bool,
        #[serde(default)]
        busy_us: u64,
    },
    /// A job's failure update committed (back to `pending`, or `dead_letter`).
    Failed {
        job: JobId,
        intended_us: Option<u64>,
        handler_us: u64,
        committed_us: u64,
        dead_lettered: bool,
        #[serde(default)]
        busy_us: u64,
    },
    /// A worker's transaction ended in a database error; `jobs` (those it held: one, or a
    /// claimed batch) were rolled back, or their outcome is unknown when `in_doubt` (the
    /// connection broke during a commit).
    WorkerError {
        at_us: u64,
        error: String,
        jobs: Vec<JobId>,
        in_doubt: bool,
    },
    /// A worker died (an injected crash, a crashing job, or its process was killed) while
    /// holding `jobs`.
    WorkerCrashed {
        at_us: u64,
        slot: u32,
        jobs: Vec<JobId>,
        /// Jobs a library's worker reported finished shortly before it died: the library
        /// may not have recorded their outcome (a re-run of one is explained by the crash).
        #[serde(default)]
        reported: Vec<JobId>,
        cause: String,
    },
    /// A library's worker process said hello: the library it runs and the settings it
    /// reported (the DBQ_BENCH_* it read and the library's own).
    WorkerHello {
        at_us: u64,
        slot: u32,
        library: Option<String>,
        #[serde(default)]
        settings: std::collections::BTreeMap<String, String>,
    },
    /// A worker process was stopped (SIGSTOP) while holding `jobs` (none, one, or a
    /// library's several).
    WorkerFrozen {
        at_us: u64,
        slot: u32,
        jobs: Vec<JobId>,
    },
    /// The reaper returned these `processing` jobs to `pending` (true: it dead-lettered them),
    /// or the queue handed a job out again by itself (a broker's redelivery, seen when it is
    /// claimed): either way the system recovered a lost run.
    Reaped {
        at_us: u64,
        jobs: Vec<(JobId, bool)>,
        /// Each reap counted as a failed attempt (`retry_count` + 1).
        counted: bool,
    },
    /// The table showed how an in-doubt job stands: its status and (where the table still
    /// holds the row) its `retry_count`, which tells failure updates that committed after
    /// all from ones that did not.
    Resolved {
        at_us: u64,
        job: JobId,
        status: JobStatus,
        retry_count: Option<i32>,
    },
    /// An in-doubt insert committed after all: the table holds its key.
    InsertFound { at_us: u64, job: JobId, key: String },
    /// In-doubt inserts that the table shows never committed.
    NeverCommitted { keys: Vec<String> },
    /// A second of the harness's own figures: its timer's lateness, its CPU, the machine's.
    HarnessSample(HarnessSample),
    /// A sample of database statistics (its `pending` count is the queue depth).
    DbSample { at_us: u64, sample: Box<DbSample> },
    /// The claim, run once under `EXPLAIN (ANALYZE, BUFFERS)` and rolled back.
    ClaimProbe {
        at_us: u64,
        label: String,
        probe: ClaimProbe,
    },
    /// The harness analyzed the queue table once the load had put rows in it (`rows` jobs
    /// enqueued by then), so that the workers' statements are planned on statistics of a
    /// table with rows (`error`: it failed, and the workers kept their older plans).
    Analyzed {
        at_us: u64,
        took_us: u64,
        rows: u64,
        error: Option<String>,
    },
    /// A fault that was injected (instant faults have `ended_us == started_us`).
    Fault(FaultRecord),
    /// Queue-table statistics taken by a fault (e.g. around an xmin hold).
    TableProbe {
        at_us: u64,
        label: String,
        stats: TableStats,
    },
    /// Every producer has stopped; no `Enqueued` event follows.
    ProducersStopped { at_us: u64 },
}

/// One injected fault.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultRecord {
    pub kind: String,
    pub phase: String,
    pub started_us: u64,
    pub ended_us: u64,
    /// How many things it hit (processes killed, backends terminated, connections held…).
    pub count: u64,
    pub detail: String,
}

/// A job reported without saying whether it was its claim's first counts as one claim.
fn first_of_its_claim() -> bool {
    true
}
