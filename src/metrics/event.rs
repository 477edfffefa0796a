//! What fleets report. Every timestamp is µs on the run clock (`clock::RunClock`); fleets
//! only stamp and send, the recorder decides what each event means for the figures.

use serde::{Deserialize, Serialize};

/// A job's id in `job_queue`.
pub type JobId = i64;

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
    },
    /// A producer's insert failed; no job exists for it.
    EnqueueFailed { at_us: u64, error: String },
    /// A claim returned a job. `intended_us` comes from the job's payload.
    Claimed {
        job: JobId,
        intended_us: Option<u64>,
        started_us: u64,
        claimed_us: u64,
    },
    /// A claim found no ready job.
    EmptyPoll { at_us: u64 },
    /// A job's `done` update committed.
    Completed {
        job: JobId,
        intended_us: Option<u64>,
        handler_us: u64,
        committed_us: u64,
    },
    /// A job's failure update committed (back to `pending`, or `dead_letter`).
    Failed {
        job: JobId,
        intended_us: Option<u64>,
        handler_us: u64,
        committed_us: u64,
        dead_lettered: bool,
    },
    /// A worker's transaction ended in a database error and was rolled back.
    WorkerError { at_us: u64, error: String },
    /// The reaper returned these `processing` jobs to `pending`.
    Reaped { at_us: u64, jobs: Vec<JobId> },
    /// A queue-depth sample (`pending` rows) taken from the database.
    QueueDepth { at_us: u64, pending: i64 },
    /// Every producer has stopped; no `Enqueued` event follows.
    ProducersStopped { at_us: u64 },
}
