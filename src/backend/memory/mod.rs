//! A queue in this process's memory, behind the same seam as the real backends and
//! registered the same way (its facts in `facts.rs`, one line of the registry). It is for
//! two things only: unit tests of the logic above the seam (fleets, the recorder, the ledger,
//! the proof), which every integration test repeats against a real server; and the
//! harness's own ceiling, a run with nothing in the way but the harness (`benches/ceiling.rs`,
//! a line of `calibrate`, and `--db url --database-url memory://`). It has no servers to
//! start and no planner: both are absent, not stubbed.
//!
//! It keeps the seed's semantics where the harness can see them: a claim in a transaction
//! holds its jobs until the worker finishes (a crash, a rollback or a dropped link puts them
//! back); a committed claim marks them `processing` until the reaper returns them; a
//! failure retries after the scenario's backoff (without jitter) or dead-letters at
//! `max_retries`; every completion is audited. Ready jobs are served first in, first out
//! (priorities are not modelled). Tests can make it misbehave ([`Mishaps`]) to check that
//! the proof notices.

mod facts;
mod link;

pub use link::MemoryLink;

use super::engine::EngineFacts;
use super::error::{BackendError, ErrorClass};
use super::job::{FailOutcome, JobId, JobStatus, NewJob};
use super::seam::{
    Attachment, Backend, DesignInfo, Driver, Endpoint, InstallError, Link, ServerFacts, WakeUp,
};
use crate::backend::queue::{BackoffPlan, Finish, QueuePlan};
use async_trait::async_trait;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// This engine takes no settings of its own (the registry's `EngineSettings`).
pub type Settings = crate::backend::engine::NoSettings;

/// The in-memory engine: one queue per URL `memory://`, in this process.
pub struct MemoryDriver;

pub static DRIVER: MemoryDriver = MemoryDriver;

impl Driver for MemoryDriver {
    fn facts(&self) -> &'static EngineFacts {
        &facts::FACTS
    }

    fn endpoint(
        &self,
        _url: &str,
        _settings: &[(String, String)],
    ) -> Result<Arc<dyn Endpoint>, String> {
        Ok(Arc::new(MemoryEndpoint))
    }

    /// The queue lives in this process's memory: its [`Backend::attachment`] is `None`, so no
    /// other process is ever told of it.
    fn attach(
        &self,
        at: &Attachment,
        _queue: &QueuePlan,
    ) -> Result<Arc<dyn Backend>, BackendError> {
        Err(BackendError::new(
            ErrorClass::Permanent,
            format!(
                "{}: the in-memory queue cannot be reached from another process",
                at.url
            ),
        ))
    }
}

/// "A server" that makes a fresh queue in memory for each install.
struct MemoryEndpoint;

#[async_trait]
impl Endpoint for MemoryEndpoint {
    fn address(&self) -> String {
        "memory://".into()
    }

    async fn ping(&self) -> Result<(), BackendError> {
        Ok(())
    }

    async fn describe(&self) -> Result<ServerFacts, BackendError> {
        Ok(ServerFacts {
            version: format!(
                "dbq-bench {} in-memory queue (no server)",
                env!("CARGO_PKG_VERSION")
            ),
            settings: BTreeMap::new(),
        })
    }

    async fn install(
        &self,
        _prefix: &str,
        queue: &QueuePlan,
        _audit: bool,
    ) -> Result<Arc<dyn Backend>, InstallError> {
        Ok(MemoryQueue::new(queue))
    }
}

/// One job's row.
#[derive(Debug, Clone)]
struct Row {
    job_type: String,
    payload: String,
    status: JobStatus,
    retry_count: i32,
    /// Not claimable before this (a failed job backing off).
    not_before: Option<Instant>,
    /// When a committed claim took it (for the reaper).
    claimed_at: Option<Instant>,
    /// `done` transitions, as the completion audit counts them.
    completions: i64,
}

/// Ways to make the queue misbehave, for tests of what notices.
#[derive(Debug, Default, Clone)]
pub struct Mishaps {
    /// The next this many commits (a finish, or a committed failure) take effect, but their
    /// reply is lost: the caller gets a connection error.
    pub lost_replies: u32,
    /// Every insert takes this long (a slow server), without holding the table.
    pub slow_inserts: Option<Duration>,
}

#[derive(Default)]
struct Table {
    /// Row of job `id` at index `id - 1`; `None` for a row that vanished.
    rows: Vec<Option<Row>>,
    ready: VecDeque<JobId>,
    /// Jobs backing off, claimable once their time has come.
    waiting: Vec<JobId>,
    mishaps: Mishaps,
    /// The bystander's rows: each one's counter.
    bystander: Vec<i64>,
}

impl Table {
    fn row(&mut self, id: JobId) -> Option<&mut Row> {
        let i = usize::try_from(id - 1).ok()?;
        self.rows.get_mut(i)?.as_mut()
    }

    fn rows(&self) -> impl Iterator<Item = (JobId, &Row)> {
        self.rows
            .iter()
            .enumerate()
            .filter_map(|(i, r)| Some((i as JobId + 1, r.as_ref()?)))
    }

    fn insert(&mut self, job: &NewJob) -> JobId {
        self.rows.push(Some(Row {
            job_type: job.job_type.clone(),
            payload: job.payload.clone(),
            status: JobStatus::Pending,
            retry_count: 0,
            not_before: None,
            claimed_at: None,
            completions: 0,
        }));
        let id = self.rows.len() as JobId;
        self.ready.push_back(id);
        id
    }

    /// Up to `n` ready jobs, the waiting ones whose time has come first moved to the queue.
    fn take(&mut self, n: usize) -> Vec<JobId> {
        if !self.waiting.is_empty() {
            let now = Instant::now();
            let (due, later): (Vec<JobId>, Vec<JobId>) = self.waiting.drain(..).partition(|id| {
                let i = (*id - 1) as usize;
                self.rows[i]
                    .as_ref()
                    .is_none_or(|r| r.not_before.is_none_or(|t| t <= now))
            });
            self.waiting = later;
            self.ready.extend(due);
        }
        let n = n.min(self.ready.len());
        self.ready.drain(..n).collect()
    }

    /// Jobs given back (a rollback): claimable again at once.
    fn give_back(&mut self, ids: &[JobId]) {
        for id in ids.iter().rev() {
            if let Some(r) = self.row(*id) {
                r.status = JobStatus::Pending;
                r.claimed_at = None;
                self.ready.push_front(*id);
            }
        }
    }

    /// The failure update: the outcome, applied.
    fn fail(&mut self, id: JobId, max_retries: i32, backoff: &BackoffPlan) -> FailOutcome {
        let Some(r) = self.row(id) else {
            return FailOutcome::Retry;
        };
        r.retry_count += 1;
        r.claimed_at = None;
        if r.retry_count >= max_retries {
            r.status = JobStatus::DeadLetter;
            return FailOutcome::DeadLettered;
        }
        r.status = JobStatus::Pending;
        let delay = backoff.base.as_secs_f64() * backoff.factor.powi(r.retry_count - 1);
        let delay = backoff.cap.map_or(delay, |c| delay.min(c.as_secs_f64()));
        r.not_before = Some(Instant::now() + Duration::from_secs_f64(delay.min(86_400.0)));
        self.waiting.push(id);
        FailOutcome::Retry
    }

    fn complete(&mut self, id: JobId) {
        if let Some(r) = self.row(id) {
            r.status = JobStatus::Done;
            r.claimed_at = None;
            r.completions += 1;
        }
    }

    /// Whether the reply of the commit just made is lost.
    fn reply_lost(&mut self) -> bool {
        let lost = self.mishaps.lost_replies > 0;
        self.mishaps.lost_replies = self.mishaps.lost_replies.saturating_sub(1);
        lost
    }

    fn reap(&mut self, stale_after: Duration, counted: bool, max: i32) -> Vec<(JobId, bool)> {
        let now = Instant::now();
        let stale: Vec<JobId> = self
            .rows()
            .filter(|(_, r)| {
                r.status == JobStatus::Processing
                    && r.claimed_at
                        .is_some_and(|t| now.duration_since(t) > stale_after)
            })
            .map(|(id, _)| id)
            .collect();
        let mut reaped = Vec::new();
        for id in stale {
            let r = self.row(id).expect("just listed");
            r.claimed_at = None;
            r.retry_count += i32::from(counted);
            let dead = counted && r.retry_count >= max;
            r.status = if dead {
                JobStatus::DeadLetter
            } else {
                JobStatus::Pending
            };
            if !dead {
                self.ready.push_back(id);
            }
            reaped.push((id, dead));
        }
        reaped
    }
}

/// The queue.
pub struct MemoryQueue {
    table: Arc<Mutex<Table>>,
    info: DesignInfo,
    backoff: BackoffPlan,
    max_retries: i32,
}

impl MemoryQueue {
    /// A queue of `plan`'s design options (its batch size, retries and backoff).
    pub fn new(plan: &QueuePlan) -> Arc<MemoryQueue> {
        Arc::new(MemoryQueue {
            table: Arc::default(),
            info: DesignInfo {
                label: "memory".into(),
                claim_batch: plan.variant.claim_batch,
                finish: Finish::Update,
                wake_up: WakeUp::Poll,
                table: "memory".into(),
                claim_sql: "take the oldest ready jobs from an in-memory FIFO".into(),
                files: None,
                ticks: None,
            },
            backoff: plan.backoff,
            max_retries: plan.max_retries,
        })
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        lock(&self.table)
    }

    /// Makes the queue misbehave from now on.
    pub fn set_mishaps(&self, mishaps: Mishaps) {
        self.table().mishaps = mishaps;
    }

    /// Removes a job's row, as a queue that really lost it would.
    pub fn lose(&self, id: JobId) {
        let mut t = self.table();
        if let Some(slot) = usize::try_from(id - 1).ok().and_then(|i| t.rows.get_mut(i)) {
            *slot = None;
        }
        t.ready.retain(|j| *j != id);
    }

    /// Puts a job into the table that no producer reported.
    pub fn smuggle(&self, job: &NewJob) -> JobId {
        self.table().insert(job)
    }
}

fn lock(table: &Mutex<Table>) -> MutexGuard<'_, Table> {
    table.lock().unwrap_or_else(|e| e.into_inner())
}

#[async_trait]
impl Backend for MemoryQueue {
    fn namespace(&self) -> &str {
        "memory"
    }

    fn design(&self) -> &DesignInfo {
        &self.info
    }

    async fn connect(&self, _role: &str) -> Result<Box<dyn Link>, BackendError> {
        // A connection costs nothing here; yielding keeps a reconnecting loop fair.
        tokio::task::yield_now().await;
        let batch = self.info.claim_batch as usize;
        let link = MemoryLink::new(self.table.clone(), batch, (self.backoff, self.max_retries));
        Ok(Box::new(link))
    }

    async fn drop_namespace(&self) -> Result<(), BackendError> {
        *self.table() = Table::default();
        Ok(())
    }
}
