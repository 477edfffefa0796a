//! The vocabulary every backend speaks: jobs going in and coming out, what a failure did to
//! a job, and the states the proof reads back.

use serde::{Deserialize, Serialize};

/// A job's id in the queue.
pub type JobId = i64;

/// A job's state in the queue: the seed's four values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    Pending,
    Processing,
    Done,
    DeadLetter,
}

impl JobStatus {
    pub const ALL: [JobStatus; 4] = [
        JobStatus::Pending,
        JobStatus::Processing,
        JobStatus::Done,
        JobStatus::DeadLetter,
    ];

    /// The value in the table.
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Pending => "pending",
            JobStatus::Processing => "processing",
            JobStatus::Done => "done",
            JobStatus::DeadLetter => "dead_letter",
        }
    }

    pub fn parse(s: &str) -> Option<JobStatus> {
        JobStatus::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// A job in this status is finished: no worker will touch it again.
    pub fn is_final(self) -> bool {
        matches!(self, JobStatus::Done | JobStatus::DeadLetter)
    }
}

impl std::fmt::Display for JobStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The fields of a job payload the harness reads back. Payloads look like
/// `{"k":"<run>-p<producer>-<seq>","t":<intended µs on the run clock>,"pad":"…"}`, plus
/// `"poison":true` / `"crash":true` for jobs whose handler always fails / crashes, and
/// `"order":<id>` for outbox jobs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct JobPayload {
    /// Intended enqueue time, µs on the run clock (see `clock`). Absent in foreign jobs.
    #[serde(default)]
    pub t: Option<u64>,
    #[serde(default)]
    pub poison: bool,
    #[serde(default)]
    pub crash: bool,
}

/// A job to enqueue.
#[derive(Debug, Clone)]
pub struct NewJob {
    pub job_type: String,
    /// JSON text.
    pub payload: String,
    pub priority: i32,
}

/// A job handed to a worker by a claim.
#[derive(Debug, Clone)]
pub struct ClaimedJob {
    pub id: JobId,
    pub job_type: String,
    pub payload: JobPayload,
    pub handout: Handout,
}

/// How a claim handed a job out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handout {
    /// As queued: its first run, or its run after a failure's back-off.
    Queued,
    /// Handed out again by the queue itself after an earlier run was lost (a broker's
    /// redelivery once its consumer's connection went): the queue's own crash recovery,
    /// which the report counts as a reap (`counted`: as a failed attempt too).
    Redelivered { counted: bool },
    /// Delivered again once too often: the queue took it to the dead letters at the claim
    /// instead of handing it out (redeliveries counted as attempts, at `max_retries`). No
    /// worker runs it; the report counts a reap that dead-lettered it.
    DeadLettered,
}

impl Handout {
    /// A redelivery, uncounted, where `redelivered`; else as queued.
    pub fn redelivered_if(redelivered: bool) -> Handout {
        match redelivered {
            true => Handout::Redelivered { counted: false },
            false => Handout::Queued,
        }
    }
}

/// What the failure update did to a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailOutcome {
    /// Back to `pending`, to run again after the backoff.
    Retry,
    /// `max_retries` reached: moved to `dead_letter`.
    DeadLettered,
    /// The update changed nothing: the job was no longer this worker's (the reaper took it
    /// back, and another worker may have run or finished it). A design that guards its
    /// updates refuses a stale outcome; the harness counts it and records no failure.
    Stale,
}

/// How an outbox insert ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Insert {
    Committed(JobId),
    /// The business transaction was rolled back on purpose, the job's insert with it.
    RolledBack,
}

/// A record in the queue the harness never produced: written by someone else into the run's
/// topics (a foreign record, a forged copy of a job, garbage).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stranger {
    /// Where it lies, in the engine's words (`jobs partition 1 offset 88`).
    pub place: String,
    /// The job it claims to be, if it names one.
    pub job: Option<JobId>,
    /// Why it is not the harness's.
    pub why: String,
}

/// What the queue's own records tell of a job the proof found lost: where its record was,
/// and whether the queue itself lost it (it acknowledged the record, then no longer held
/// it: a broker that lost its log), rather than the harness or the workers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Loss {
    pub job: JobId,
    /// The queue lost what it had acknowledged.
    pub by_queue: bool,
    /// In the engine's words: where the record was, and what is there now.
    pub why: String,
}

/// A job whose state in the queue disagrees with what the harness's ledger expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableMismatch {
    pub id: JobId,
    /// The row's status, or `missing`.
    pub table_status: String,
    /// `done`, `dead_letter` or `open` (not finished, as far as the ledger knows).
    pub expected: String,
}
