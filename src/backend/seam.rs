//! The seam between the harness and a queue backend. Everything above it (fleets, faults,
//! the sampler, the proof, the stages of a run) holds these traits and nothing of an
//! engine; each engine is one module below it (`postgres`, `mariadb`; `memory` for unit
//! tests and the harness's own ceiling).
//!
//! - [`Driver`]: an engine: how to reach its servers and how providers make one.
//! - [`Endpoint`]: one server, reachable; installs queues in namespaces of their own.
//! - [`Backend`]: one installed queue (a design in a namespace); hands out connections.
//! - [`Link`]: one [`Connection`] to it, with what each role does on it: [`Enqueue`] (producers),
//!   [`Work`] (workers and the reaper), [`Inspect`] (set-up, the sampler, the proof) and
//!   [`Disrupt`] (fault drivers).

use super::error::BackendError;
use super::figures::{ClaimProbe, DbSample, TableStats};
use super::job::{ClaimedJob, FailOutcome, Insert, JobId, JobStatus, NewJob, TableMismatch};
use crate::engine::{Engine, ShutdownMode};
use crate::scenario::{ClaimMode, Finish, QueuePlan};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// An engine: one per engine, in the registry (`backend::driver`).
pub trait Driver: Sync {
    fn engine(&self) -> Engine;
    /// A server given by URL (the url provider), `settings` applied to each session where
    /// the engine can (the plan refuses them where it cannot).
    fn endpoint(
        &self,
        url: &str,
        settings: &[(String, String)],
    ) -> Result<Arc<dyn Endpoint>, String>;
    /// The signal that stops a server of this engine in `mode`.
    fn shutdown_signal(&self, mode: ShutdownMode) -> nix::sys::signal::Signal;
    /// How the local provider makes and runs a throwaway server of this engine.
    fn local(&self) -> &dyn LocalServer;
    /// How the container provider runs one.
    fn container(&self) -> &dyn ContainerImage;
    /// A queue installed by another process, reached again (worker processes).
    fn attach(&self, at: &Attachment, queue: &QueuePlan) -> Result<Arc<dyn Backend>, BackendError>;
}

/// Where a local server's binaries are.
#[derive(Debug, Clone)]
pub struct LocalBinaries {
    /// The directory of the server program.
    pub bin_dir: PathBuf,
    /// The program that makes a data directory.
    pub init: PathBuf,
}

/// How the local provider makes and runs a server of one engine.
pub trait LocalServer: Sync {
    /// The server program's name, for messages (`postgres`, `mariadbd`).
    fn program(&self) -> &'static str;
    /// The account Debian's packages made for the server, which it runs as when the harness
    /// runs as root (neither server runs as root).
    fn account(&self) -> &'static str;
    /// Finds the binaries; the error says how to install them.
    fn binaries(&self) -> anyhow::Result<LocalBinaries>;
    /// The command that makes the data directory `dir/data`.
    fn init(&self, bins: &LocalBinaries, dir: &Path) -> Command;
    /// The command that serves `dir/data` on 127.0.0.1:`port`.
    fn serve(
        &self,
        bins: &LocalBinaries,
        dir: &Path,
        port: u16,
        settings: &[(String, String)],
    ) -> Command;
    /// How to reach the server once it runs.
    fn endpoint(&self, port: u16) -> Arc<dyn Endpoint>;
    /// How to stop it by hand, when `--keep` leaves it running.
    fn stop_hint(&self, dir: &Path) -> String;
}

/// How the container provider runs a server of one engine from an image that behaves like
/// the engine's official one.
pub trait ContainerImage: Sync {
    /// The server's port inside the container.
    fn port(&self) -> u16;
    /// The variable that sets the administrator's password.
    fn password_variable(&self) -> &'static str;
    /// The container's command, with the server settings as its arguments (and the
    /// password, for a server that takes it as an argument rather than from the variable).
    fn command(&self, settings: &[(String, String)], password: &str) -> Vec<String>;
    /// How to reach the server on 127.0.0.1:`host_port` with `password`.
    fn endpoint(&self, host_port: u16, password: &str) -> Arc<dyn Endpoint>;
    /// What to do when the image cannot be had (one clause, for messages).
    fn alternatives(&self, image: &str) -> String;
}

/// What a server says about itself.
#[derive(Debug, Clone, Default)]
pub struct ServerFacts {
    /// `SELECT version()`, named by engine.
    pub version: String,
    /// The settings that shape a benchmark's results, as the server reports them.
    pub settings: BTreeMap<String, String>,
}

/// A design could not be installed: which file (or key) and why (bad input, exit 2).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{file}: {reason}")]
pub struct DesignError {
    pub file: String,
    pub reason: String,
}

/// Why installing a queue failed.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The design itself is at fault (a custom design's files).
    #[error(transparent)]
    Design(#[from] DesignError),
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// One server, reachable.
#[async_trait]
pub trait Endpoint: Send + Sync {
    fn engine(&self) -> Engine;
    /// `scheme://user@host:port/database`, never the password.
    fn address(&self) -> String;
    /// Connects once and hangs up: whether the server accepts connections now. A permanent
    /// error (a refused login, an unknown database) will not change by waiting.
    async fn ping(&self) -> Result<(), BackendError>;
    async fn describe(&self) -> Result<ServerFacts, BackendError>;
    /// A fresh namespace (`<prefix>_<time>_<random>`) with `queue`'s design installed, and
    /// the completion audit when `audit`.
    async fn install(
        &self,
        prefix: &str,
        queue: &QueuePlan,
        audit: bool,
    ) -> Result<Arc<dyn Backend>, InstallError>;
}

/// How another process reaches an installed queue (a URL with its password: never shown).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Attachment {
    pub engine: Engine,
    pub url: String,
    pub namespace: String,
}

/// How an idle worker waits after an empty claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WakeUp {
    /// Sleep `consumers.poll_interval` (the seed).
    Poll,
    /// Wait for a notification from an enqueue, or `poll_interval`, whichever comes first.
    Notify,
}

/// What the harness knows of an installed design.
#[derive(Debug, Clone)]
pub struct DesignInfo {
    /// `seed`, `batch`, …, or `custom:<dir>`.
    pub label: String,
    /// Jobs one claim takes at most.
    pub claim_batch: u32,
    pub finish: Finish,
    pub wake_up: WakeUp,
    /// The hot table: what statistics, cleanup and readers look at.
    pub table: String,
    /// The claim statement (or the backend's own words for it), for reports.
    pub claim_sql: String,
    /// SHA-256 over a custom design's statement files, in name order.
    pub files_sha256: Option<String>,
}

/// One installed queue.
#[async_trait]
pub trait Backend: Send + Sync {
    /// Where the queue lives on its server (a schema; a database on MariaDB).
    fn namespace(&self) -> &str;
    fn design(&self) -> &DesignInfo;
    /// A connection in `role` (`worker-3`, `sampler`, …), named on the server so that a
    /// run's own sessions can be told apart and targeted by faults.
    async fn connect(&self, role: &str) -> Result<Box<dyn Link>, BackendError>;
    /// Wake-ups for idle workers, for designs that announce jobs (one per announcement),
    /// until `stop`; `None` when workers only poll.
    fn wake_ups(&self, stop: &CancellationToken) -> Option<Arc<Notify>>;
    /// How a worker process reaches this queue (`None`: only from this process).
    fn attachment(&self) -> Option<Attachment>;
    /// Environment that points the engine's own command-line clients (pgbench) at the
    /// namespace.
    fn client_env(&self) -> Vec<(String, String)>;
    /// Drops the namespace and everything in it.
    async fn drop_namespace(&self) -> Result<(), BackendError>;
}

/// What a backend without an operation answers (the default of the operations only some
/// engines have; validation refuses the scenarios that need them first, from the engine
/// table, so this is reached only by a caller that skipped it).
fn not_here(what: &str) -> BackendError {
    BackendError::unsupported(what, "this backend")
}

/// One connection to an installed queue.
pub trait Link: Connection + Enqueue + Work + Inspect + Disrupt + Bystand {}

impl<T: Connection + Enqueue + Work + Inspect + Disrupt + Bystand> Link for T {}

/// What a bystander does: statements on a small table of its own in the run's namespace,
/// unrelated to the queue, each in its own transaction.
#[async_trait]
pub trait Bystand: Send {
    /// Creates its table with `rows` rows (ids 1 to `rows`).
    async fn install_bystander(&mut self, rows: u32) -> Result<(), BackendError>;
    /// Reads one row by primary key.
    async fn bystander_read(&mut self, id: i64) -> Result<(), BackendError>;
    /// Updates one row by primary key.
    async fn bystander_update(&mut self, id: i64) -> Result<(), BackendError>;
}

/// The connection itself.
#[async_trait]
pub trait Connection: Send {
    /// Hangs up cleanly (dropping a link instead is a crash: no goodbye).
    async fn close(self: Box<Self>);
}

/// What a producer does.
#[async_trait]
pub trait Enqueue: Send {
    async fn enqueue(&mut self, job: &NewJob) -> Result<JobId, BackendError>;
    /// Inserts many jobs at once (the prefill); their ids.
    async fn enqueue_batch(&mut self, jobs: &[NewJob]) -> Result<Vec<JobId>, BackendError>;
    /// The seed's outbox: the business update (`order` paid) and the insert in one
    /// transaction, committed, or rolled back on purpose. The error says whether it came
    /// while committing (the insert's outcome is then unknown).
    async fn enqueue_in_outbox(
        &mut self,
        _job: &NewJob,
        _order: i64,
        _roll_back: bool,
    ) -> Result<Insert, (BackendError, bool)> {
        Err((not_here("the outbox"), false))
    }
}

/// What a worker and the reaper do. A worker that crashes drops its link without a word:
/// the backend sees the client vanish, as after a real crash.
#[async_trait]
pub trait Work: Send {
    /// Claims the next job (or batch). `InTransaction`: inside the worker's transaction,
    /// which holds the claim until [`Work::finish`]; `Committed`: the claim commits by itself.
    async fn claim(&mut self, mode: ClaimMode) -> Result<Vec<ClaimedJob>, BackendError>;
    /// Ends a claim that found nothing.
    async fn idle(&mut self, mode: ClaimMode) -> Result<(), BackendError>;
    /// The failure update: back to pending after the backoff, or dead-lettered.
    async fn fail(&mut self, id: JobId, error: &str) -> Result<FailOutcome, BackendError>;
    /// Completes `done` and commits what the claim began (`InTransaction`: failure updates
    /// made since commit with it), or completes them on their own (`Committed`).
    async fn finish(&mut self, mode: ClaimMode, done: &[JobId]) -> Result<(), BackendError>;
    /// After an error: ends whatever is open; false when the link cannot be used again.
    async fn recover(&mut self, mode: ClaimMode) -> bool;
    /// The stale-job reaper: jobs claimed longer ago than `stale_after` go back to pending
    /// (with `count_as_attempt`, as a failed attempt that can dead-letter them); the jobs and
    /// whether each was dead-lettered.
    async fn reap(
        &mut self,
        stale_after: Duration,
        count_as_attempt: bool,
    ) -> Result<Vec<(JobId, bool)>, BackendError>;
}

/// What the run's own connections read: set-up, the sampler, the proof.
#[async_trait]
pub trait Inspect: Send {
    /// The outbox's `orders` table with `orders` unpaid rows.
    async fn install_outbox(&mut self, _orders: u64) -> Result<(), BackendError> {
        Err(not_here("the outbox"))
    }
    /// Refreshes the planner's statistics (after the prefill, before workers plan).
    async fn analyze(&mut self) -> Result<(), BackendError>;
    /// The claim's plan (planned, not run), one line per step.
    async fn explain_claim(&mut self) -> Result<Vec<String>, BackendError>;
    /// One sample of statistics; a `full` one also counts every status.
    async fn sample(&mut self, full: bool) -> Result<DbSample, BackendError>;
    /// The claim run once and undone: what it costs right now.
    async fn probe_claim(&mut self) -> Result<ClaimProbe, BackendError> {
        Err(not_here("a claim probe"))
    }
    async fn table_stats(&mut self) -> Result<TableStats, BackendError>;
    /// Jobs by status: (status, count).
    async fn status_counts(&mut self) -> Result<Vec<(String, i64)>, BackendError>;
    /// How the given jobs stand: (id, status, retry count where the queue keeps it).
    async fn job_statuses(
        &mut self,
        ids: &[JobId],
    ) -> Result<Vec<(JobId, JobStatus, Option<i32>)>, BackendError>;
    /// Jobs whose payload key is one of `keys`: (id, key).
    async fn jobs_by_key(&mut self, keys: &[String]) -> Result<Vec<(JobId, String)>, BackendError>;
    /// Jobs missing, unfinished, or finished otherwise than `expected` (parallel to `ids`).
    async fn table_mismatches(
        &mut self,
        ids: &[JobId],
        expected: &[&str],
    ) -> Result<Vec<TableMismatch>, BackendError>;
    /// Jobs with ids in `[from, to)` that are not among `known`: (id, status).
    async fn untracked_between(
        &mut self,
        known: &[JobId],
        from: JobId,
        to: JobId,
    ) -> Result<Vec<(JobId, String)>, BackendError>;
    /// Jobs the completion audit saw finish as `done` more than once: (id, completions).
    async fn audited_duplicates(&mut self) -> Result<Vec<(JobId, i64)>, BackendError>;
    /// Orders whose business transaction committed.
    async fn paid_orders(&mut self) -> Result<i64, BackendError> {
        Err(not_here("the outbox"))
    }
    /// Orders that break the outbox promise: (order id, status, jobs).
    async fn outbox_problems(&mut self) -> Result<Vec<(i64, String, i64)>, BackendError> {
        Err(not_here("the outbox"))
    }
}

/// What fault drivers do to the server through a connection of their own.
#[async_trait]
pub trait Disrupt: Send {
    /// Ends up to `count` of the run's sessions whose role starts with one of `roles`,
    /// chosen at random; how (the server's word for it) and how many.
    async fn terminate_sessions(
        &mut self,
        roles: &[&str],
        count: u32,
    ) -> Result<(&'static str, u64), BackendError>;
    /// Opens a transaction that holds back what MVCC may clean up; its id. Released by
    /// [`Work::recover`] or by closing the link.
    async fn hold_horizon(&mut self) -> Result<i64, BackendError> {
        Err(not_here("idle_in_transaction"))
    }
    /// After a hold of `held` was released: waits up to `wait` (or until `stop`) until what
    /// was held can be cleaned up, no other session of the run still seeing it; how many
    /// still did when the wait ended.
    async fn await_horizon(
        &mut self,
        _held: i64,
        _wait: Duration,
        _stop: &CancellationToken,
    ) -> Option<u64> {
        None
    }
    /// Cleans the table up now where the engine does that on demand (VACUUM).
    async fn clean_up(&mut self) -> Result<(), BackendError>;
    /// Keeps the background cleanup off the queue table (`off`), or lets it run again.
    /// Unsupported where cleanup is not per table (InnoDB's purge).
    async fn hold_autovacuum(&mut self, _off: bool) -> Result<(), BackendError> {
        Err(not_here("delay_vacuum"))
    }
    /// One cleanup of the queue table now, paced as the background cleanup paces its own.
    async fn vacuum_as_autovacuum(&mut self) -> Result<(), BackendError> {
        Err(not_here("delay_vacuum"))
    }
    /// Opens a long REPEATABLE READ snapshot; [`Disrupt::scan`] reads the table in it.
    async fn begin_snapshot(&mut self) -> Result<(), BackendError> {
        Err(not_here("active_readers"))
    }
    async fn scan(&mut self) -> Result<(), BackendError> {
        Err(not_here("active_readers"))
    }
    /// The server's view of the session in `role`: `idle in transaction` when it holds a
    /// claim inside a transaction; `None` when there is no such session. Unsupported where
    /// the engine cannot tell.
    async fn session_state(&mut self, _role: &str) -> Result<Option<String>, BackendError> {
        Err(not_here("a session's state"))
    }
}
