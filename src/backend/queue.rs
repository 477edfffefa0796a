//! What a backend is asked to install and run: the queue's design with the options that shape
//! it, its retry back-off, and when a worker's claim commits. Plain data that the scenario's
//! validation builds and every engine reads; the backend never reads a scenario.

use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QueuePlan {
    pub variant: VariantPlan,
    pub max_retries: i32,
    pub backoff: BackoffPlan,
    /// ANALYZE the queue table while it is empty (`queue.stale_statistics`).
    #[serde(default)]
    pub stale_statistics: bool,
    /// The priorities producers give jobs (`producers.priorities`), each once, ascending:
    /// what a design that declares its own priority range maps into it.
    #[serde(default)]
    pub priorities: Vec<i32>,
    /// A job the queue hands out again by itself after its run was lost (a broker's
    /// redelivery) counts as a failed attempt, and goes to the dead letters at
    /// `max_retries`: `reaper.count_as_attempt` on a queue that rescues jobs without the
    /// harness's reaper.
    #[serde(default)]
    pub redeliveries_count: bool,
    /// The settings only the run's engine acts on, its own type (`queue.rabbitmq_queue`,
    /// `queue.partitions`).
    pub engine: super::EngineSettings,
}

/// Which queue design, with the options that shape it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VariantPlan {
    pub name: VariantName,
    /// Jobs per claim statement (`batch`, and `custom` when above 1).
    pub claim_batch: u32,
    /// `queue.visibility_timeout`, where given (the design supplies its default).
    pub visibility_timeout: Option<Duration>,
    /// `queue.rotation_period` (rotation only).
    pub rotation_period: Duration,
    /// A `custom` variant's directory, resolved against the scenario file's.
    pub dir: Option<std::path::PathBuf>,
    pub fillfactor: Option<u32>,
    pub unlogged: bool,
    /// A custom design whose workers are a queue library's own processes (its design.toml's
    /// `[worker]`): the harness enqueues and proves, the library claims and finishes.
    #[serde(default)]
    pub workers: Option<ExternalWorkers>,
}

/// A queue library's worker processes, as a design's `[worker]` declares them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExternalWorkers {
    /// The command and its arguments, run in `dir` (the design's directory).
    pub command: Vec<String>,
    pub dir: std::path::PathBuf,
    /// Jobs one process runs at once (the library's own concurrency setting).
    pub concurrency: u32,
    /// How long a started process may take to say hello on the harness's socket.
    pub connect_timeout: Duration,
}

impl ExternalWorkers {
    /// The command as a user wrote it, on one line, for messages: `[python3 worker.py]`
    /// (a long argument cut at 60 characters, a line break shown as `\n`).
    pub fn shown(&self) -> String {
        let args: Vec<String> = self
            .command
            .iter()
            .map(|a| {
                let one_line = a.replace('\n', "\\n");
                match one_line.char_indices().nth(60) {
                    Some((cut, _)) => format!("{}…", &one_line[..cut]),
                    None => one_line,
                }
            })
            .collect();
        format!("[{}]", args.join(" "))
    }
}

/// `min(base * factor^retry_count, cap)`, then jitter.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct BackoffPlan {
    pub base: Duration,
    pub factor: f64,
    pub cap: Option<Duration>,
    pub jitter: Jitter,
}

impl BackoffPlan {
    /// The seed's formula, which `[queue.backoff]` departs from: a design with a back-off of
    /// its own is refused only a value set away from this.
    pub fn seed() -> BackoffPlan {
        BackoffPlan {
            base: Duration::from_secs(1),
            factor: 2.0,
            cap: None,
            jitter: Jitter::None,
        }
    }
}

/// Which queue design runs (docs/designs.md describes each).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum VariantName {
    /// The article's design, verbatim.
    #[default]
    Seed,
    /// Claims up to `queue.claim_batch` jobs per statement and completes them in one.
    Batch,
    /// The seed plus LISTEN/NOTIFY wake-ups (the poll stays as a fallback).
    Notify,
    /// Finished jobs are deleted.
    Delete,
    /// Finished jobs move to an archive table.
    Archive,
    /// A plain index led by `status` instead of the seed's partial index.
    PlainIndex,
    /// Que's design: the claim takes an advisory lock on the first free pending job and
    /// writes no row; completion deletes.
    AdvisoryLock,
    /// pgmq's design: no status column; a claim hides the job for `queue.visibility_timeout`
    /// and counts the read; completion deletes; a crashed worker's job reappears when its
    /// timeout runs out.
    VisibilityTimeout,
    /// PgQ's design: jobs go to three partitions in turn; a partition whose jobs have all
    /// finished is truncated instead of vacuumed.
    Rotation,
    /// A user's own SQL files in `queue.dir`.
    Custom,
}

/// How finished jobs leave the queue table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Finish {
    /// `status = 'done'`; the row stays (the seed).
    Update,
    /// The row is deleted.
    Delete,
    /// The row moves to an archive table.
    Archive,
    /// The row stays until its whole table is truncated.
    Truncate,
}

/// The files a `custom` variant's directory must hold (the others default to the seed's).
pub const CUSTOM_REQUIRED_FILES: [&str; 5] = [
    "schema.sql",
    "enqueue.sql",
    "claim.sql",
    "complete.sql",
    "fail.sql",
];

/// The files a design whose workers are a library's own processes must hold: its schema and
/// its enqueue (the library claims and finishes jobs itself).
pub const EXTERNAL_REQUIRED_FILES: [&str; 2] = ["schema.sql", "enqueue.sql"];

/// The files a custom design must hold: `external` when its workers are a library's.
pub fn required_files(external: bool) -> &'static [&'static str] {
    match external {
        true => &EXTERNAL_REQUIRED_FILES,
        false => &CUSTOM_REQUIRED_FILES,
    }
}

impl VariantName {
    /// How the variant's finished jobs leave the table.
    pub fn finish(self) -> Finish {
        match self {
            VariantName::Delete | VariantName::AdvisoryLock | VariantName::VisibilityTimeout => {
                Finish::Delete
            }
            VariantName::Archive => Finish::Archive,
            VariantName::Rotation => Finish::Truncate,
            _ => Finish::Update,
        }
    }

    /// The proof needs the completion audit: a finished job's row leaves no trace of its own.
    pub fn needs_audit(self) -> bool {
        matches!(self.finish(), Finish::Delete | Finish::Truncate)
    }

    /// Claims more than one job per statement when `queue.claim_batch` says so.
    pub fn claims_in_batches(self) -> bool {
        matches!(self, VariantName::Batch | VariantName::Custom)
    }

    /// What the variant takes that the engines without it lack, for their refusal.
    pub fn takes(self) -> &'static str {
        match self {
            VariantName::Seed | VariantName::Batch => "",
            VariantName::Notify => " (it wakes workers with LISTEN/NOTIFY)",
            VariantName::PlainIndex => {
                " (it weighs PostgreSQL's partial index against a plain one; MariaDB, without partial indexes, has a plain one in its seed)"
            }
            VariantName::AdvisoryLock => {
                " (it takes transaction-scoped advisory locks, pg_try_advisory_xact_lock; MariaDB's GET_LOCK lasts for a session)"
            }
            VariantName::Delete | VariantName::Archive | VariantName::VisibilityTimeout => {
                " (its statements, audit and proof queries are SQL)"
            }
            VariantName::Rotation => {
                " (its partitions, truncation and ticker are not written for the other engines yet)"
            }
            VariantName::Custom => {
                " (a custom directory is SQL, in PostgreSQL's or MariaDB's dialect)"
            }
        }
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            VariantName::Seed => "seed",
            VariantName::Batch => "batch",
            VariantName::Notify => "notify",
            VariantName::Delete => "delete",
            VariantName::Archive => "archive",
            VariantName::PlainIndex => "plain_index",
            VariantName::AdvisoryLock => "advisory_lock",
            VariantName::VisibilityTimeout => "visibility_timeout",
            VariantName::Rotation => "rotation",
            VariantName::Custom => "custom",
        }
    }
}

/// Random spread applied to each backoff delay.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Jitter {
    /// The delay as computed (the seed).
    #[default]
    None,
    /// Uniform between 0 and the delay.
    Full,
    /// Half the delay plus uniform up to the other half.
    Equal,
}

impl Jitter {
    /// The share of the backoff delay that is always waited (the failure update's
    /// parameter): none 1, equal ½, full 0.
    pub fn floor(self) -> f64 {
        match self {
            Jitter::None => 1.0,
            Jitter::Equal => 0.5,
            Jitter::Full => 0.0,
        }
    }
}

/// When a worker's claim is committed.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ClaimMode {
    /// The seed: claim, run the handler and complete in one transaction; a crash rolls the
    /// claim back by itself.
    #[default]
    InTransaction,
    /// Commit `processing` first, run the handler outside any transaction, complete in a
    /// second transaction; only the reaper rescues a crashed worker's job.
    Committed,
}

impl ClaimMode {
    pub fn as_str(&self) -> &'static str {
        match self {
            ClaimMode::InTransaction => "in_transaction",
            ClaimMode::Committed => "committed",
        }
    }
}
