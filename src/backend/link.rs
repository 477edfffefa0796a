//! One connection to an installed queue ([`Link`]) and what each role does on it. The
//! required part is what every queue does: enqueue ([`Enqueue`]), claim, finish and fail
//! ([`Work`]) and the proof's and the sampler's view ([`Inspect`]). What only some engines
//! have is a capability a link offers or not, each an `Option` absent by default, so an
//! engine without it writes nothing: the bystander, the planner, the outbox, the group,
//! provenance, ending sessions, sessions' states, a held MVCC horizon, per-table cleanup,
//! long snapshot readers and the completion audit. The engine's facts declare the same
//! capabilities for validation (the faults it runs, the audit, the bystander …), which
//! refuses a scenario that needs one before any server is reached; a test walking the
//! registry holds the two together.

use super::error::BackendError;
use super::figures::{ClaimProbe, DbSample, GroupView, TableStats};
use super::job::{
    ClaimedJob, FailOutcome, Insert, JobId, JobStatus, Loss, NewJob, Stranger, TableMismatch,
};
use crate::backend::queue::ClaimMode;
use async_trait::async_trait;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The role of the connection that settles in-doubt outcomes while the run's workers still
/// work (`Backend::connect`): a backend answers it without disturbing the queue — a broker
/// that can read its waiting messages only by taking them (and giving them back marked
/// redelivered) reads none on it.
pub const SETTLE_ROLE: &str = "settle";

/// One connection to an installed queue: the required roles, and the capabilities an engine
/// may offer, each `None` unless it does.
pub trait Link: Connection + Enqueue + Work + Inspect {
    /// Statements on a table of the bystander's own (`[bystander]`).
    fn bystander(&mut self) -> Option<&mut dyn Bystand> {
        None
    }
    /// The planner's statistics and the claim's plan (`queue.stale_statistics`, the `analyze`
    /// fault, plan probes, the ANALYZE as a fresh table grows).
    fn planner(&mut self) -> Option<&mut dyn Planner> {
        None
    }
    /// The transactional outbox (`producers.outbox`).
    fn outbox(&mut self) -> Option<&mut dyn Outbox> {
        None
    }
    /// The workers' group, where workers share the queue only as members of one (Kafka's
    /// consumer group): a step's load starts once it has formed.
    fn group(&mut self) -> Option<&mut dyn Group> {
        None
    }
    /// Where the queue's records came from, for a queue anyone with access may write to
    /// in the harness's own shape (a Kafka topic): the proof names the strangers.
    fn provenance(&mut self) -> Option<&mut dyn Provenance> {
        None
    }
    /// Ending the run's sessions (`kill_backends`).
    fn sessions(&mut self) -> Option<&mut dyn Sessions> {
        None
    }
    /// The server's view of a session (`freeze_workers` on a claim held in a transaction).
    fn session_states(&mut self) -> Option<&mut dyn SessionStates> {
        None
    }
    /// A held MVCC horizon (`idle_in_transaction`).
    fn mvcc(&mut self) -> Option<&mut dyn Mvcc> {
        None
    }
    /// Per-table cleanup on demand and held off (`delay_vacuum`; the cleanup between steps).
    fn vacuum(&mut self) -> Option<&mut dyn Vacuum> {
        None
    }
    /// Long snapshot readers (`active_readers`).
    fn readers(&mut self) -> Option<&mut dyn Readers> {
        None
    }
    /// The completion audit (`verify.completion_audit`).
    fn audit(&mut self) -> Option<&mut dyn Audit> {
        None
    }
}

/// A queue whose records the harness cannot keep others from writing: which of them it
/// never produced.
#[async_trait]
pub trait Provenance: Send {
    /// Every record the queue holds that the harness never produced.
    async fn strangers(&mut self) -> Result<Vec<Stranger>, BackendError>;
    /// Where the records of `lost` jobs went, for those the queue can say.
    async fn losses(&mut self, lost: &[JobId]) -> Result<Vec<Loss>, BackendError>;
}

/// A queue whose workers take their share of it by joining one group, which hands each
/// member its part and hands it out again whenever a member joins or leaves (every member
/// pausing meanwhile).
#[async_trait]
pub trait Group: Send {
    /// The group as its coordinator describes it now.
    async fn describe_group(&mut self) -> Result<GroupView, BackendError>;
}

/// What a query planner offers: statistics refreshed on demand, and the claim's plan.
#[async_trait]
pub trait Planner: Send {
    /// Refreshes the planner's statistics (after the prefill, before workers plan).
    async fn analyze(&mut self) -> Result<(), BackendError>;
    /// The claim's plan (planned, not run), one line per step.
    async fn explain_claim(&mut self) -> Result<Vec<String>, BackendError>;
    /// The claim run once and undone: what it costs right now.
    async fn probe_claim(&mut self) -> Result<ClaimProbe, BackendError>;
}

/// The seed's outbox: a business table (`orders`) and the job inserted in the same
/// transaction as its update.
#[async_trait]
pub trait Outbox: Send {
    /// The `orders` table with `orders` unpaid rows.
    async fn install_outbox(&mut self, orders: u64) -> Result<(), BackendError>;
    /// The business update (`order` paid) and the insert in one transaction, committed, or
    /// rolled back on purpose. The error says whether it came while committing (the
    /// insert's outcome is then unknown).
    async fn enqueue_in_outbox(
        &mut self,
        job: &NewJob,
        order: i64,
        roll_back: bool,
    ) -> Result<Insert, (BackendError, bool)>;
    /// Orders whose business transaction committed.
    async fn paid_orders(&mut self) -> Result<i64, BackendError>;
    /// Orders that break the outbox promise: (order id, status, jobs).
    async fn outbox_problems(&mut self) -> Result<Vec<(i64, String, i64)>, BackendError>;
}

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
    /// made since commit with it), or completes them on their own (`Committed`). Returns
    /// the stale completions: the jobs of `done` whose completion finished nothing, because
    /// they were no longer this worker's (a design that guards its completion refuses them).
    async fn finish(&mut self, mode: ClaimMode, done: &[JobId])
    -> Result<Vec<JobId>, BackendError>;
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
    /// One round of the design's ticker (rotation's truncation), for designs whose
    /// [`DesignInfo::ticks`](super::seam::DesignInfo) says they have one.
    async fn tick(&mut self) -> Result<(), BackendError> {
        Ok(())
    }
}

/// What the run's own connections read: set-up, the sampler, the proof.
#[async_trait]
pub trait Inspect: Send {
    /// One sample of statistics; a `full` one also counts every status.
    async fn sample(&mut self, full: bool) -> Result<DbSample, BackendError>;
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
}

/// Sessions the run's own connections can end (`kill_backends`).
#[async_trait]
pub trait Sessions: Send {
    /// Ends up to `count` of the run's sessions whose role starts with one of `roles`,
    /// chosen at random; how (the server's word for it) and how many.
    async fn terminate_sessions(
        &mut self,
        roles: &[&str],
        count: u32,
    ) -> Result<(&'static str, u64), BackendError>;
}

/// A server that tells what a session is doing (`freeze_workers` asks whether a stopped
/// worker still holds its claim inside a transaction).
#[async_trait]
pub trait SessionStates: Send {
    /// The server's view of the session in `role`: `idle in transaction` when it holds a
    /// claim inside a transaction; `None` when there is no such session.
    async fn session_state(&mut self, role: &str) -> Result<Option<String>, BackendError>;
}

/// What an MVCC engine offers: a transaction that holds back what may be cleaned up
/// (`idle_in_transaction`).
#[async_trait]
pub trait Mvcc: Send {
    /// Opens a transaction that holds back what MVCC may clean up; its id. Released by
    /// [`Work::recover`] or by closing the link.
    async fn hold_horizon(&mut self) -> Result<i64, BackendError>;
    /// After a hold of `held` was released: waits up to `wait` (or until `stop`) until what
    /// was held can be cleaned up, no other session of the run still seeing it; how many
    /// still did when the wait ended (`None` where the engine cannot tell).
    async fn await_horizon(
        &mut self,
        held: i64,
        wait: Duration,
        stop: &CancellationToken,
    ) -> Option<u64>;
}

/// An engine that cleans a table up on demand and in the background, per table (PostgreSQL's
/// VACUUM and autovacuum; InnoDB's purge is the server's, a broker forgets by itself).
#[async_trait]
pub trait Vacuum: Send {
    /// Cleans the queue table up now.
    async fn clean_up(&mut self) -> Result<(), BackendError>;
    /// Keeps the background cleanup off the queue table (`off`), or lets it run again.
    async fn hold_autovacuum(&mut self, off: bool) -> Result<(), BackendError>;
    /// One cleanup of the queue table now, paced as the background cleanup paces its own.
    async fn vacuum_as_autovacuum(&mut self) -> Result<(), BackendError>;
}

/// Long readers of the queue table on one snapshot (`active_readers`).
#[async_trait]
pub trait Readers: Send {
    /// Opens a long REPEATABLE READ snapshot; [`Readers::scan`] reads the table in it.
    async fn begin_snapshot(&mut self) -> Result<(), BackendError>;
    async fn scan(&mut self) -> Result<(), BackendError>;
}

/// The completion audit (`verify.completion_audit`): the server's own record of every
/// completion, installed with the queue.
#[async_trait]
pub trait Audit: Send {
    /// Jobs with ids in `[from, to)` that the completion audit saw finish as `done`: (id,
    /// completions).
    async fn audited_completions(
        &mut self,
        from: JobId,
        to: JobId,
    ) -> Result<Vec<(JobId, i64)>, BackendError>;
}
