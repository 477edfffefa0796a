//! A connection to the in-memory queue: what producers, workers and the proof do on it,
//! each step on the shared table under its lock.

use super::{Table, lock};
use crate::backend::error::{BackendError, ErrorClass};
use crate::backend::figures::{DbSample, TableStats};
use crate::backend::job::{
    ClaimedJob, FailOutcome, Handout, JobId, JobPayload, JobStatus, NewJob, TableMismatch,
};
use crate::backend::seam::{Audit, Bystand, Connection, Enqueue, Inspect, Work};
use crate::backend::queue::{BackoffPlan, ClaimMode};
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// One connection: the jobs its open transaction holds, and its failure updates not yet
/// committed.
pub struct MemoryLink {
    table: Arc<Mutex<Table>>,
    claim_batch: usize,
    backoff: BackoffPlan,
    max_retries: i32,
    held: Vec<JobId>,
    held_failures: Vec<JobId>,
}

impl MemoryLink {
    /// A new connection to `table`, holding nothing.
    pub(super) fn new(
        table: Arc<Mutex<Table>>,
        claim_batch: usize,
        (backoff, max_retries): (BackoffPlan, i32),
    ) -> MemoryLink {
        MemoryLink {
            table,
            claim_batch,
            backoff,
            max_retries,
            held: Vec::new(),
            held_failures: Vec::new(),
        }
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        lock(&self.table)
    }

    /// Up to a batch of ready jobs; a committed claim marks them `processing`.
    fn take(&self, mode: ClaimMode) -> Vec<ClaimedJob> {
        let mut t = self.table();
        let ids = t.take(self.claim_batch);
        let now = Instant::now();
        ids.into_iter()
            .map(|id| {
                let r = t.row(id).expect("ready jobs have rows");
                if mode == ClaimMode::Committed {
                    r.status = JobStatus::Processing;
                    r.claimed_at = Some(now);
                }
                ClaimedJob {
                    id,
                    job_type: r.job_type.clone(),
                    payload: serde_json::from_str::<JobPayload>(&r.payload).unwrap_or_default(),
                    handout: Handout::Queued,
                }
            })
            .collect()
    }

    /// Commits the open transaction: its completions and failure updates take effect; a job
    /// it neither completed nor failed stays claimed. Whether the commit's reply is lost.
    fn commit(&mut self, mode: ClaimMode, done: &[JobId]) -> bool {
        let held = std::mem::take(&mut self.held);
        let failures = std::mem::take(&mut self.held_failures);
        let mut t = lock(&self.table);
        for id in done {
            t.complete(*id);
        }
        for id in &failures {
            t.fail(*id, self.max_retries, &self.backoff);
        }
        for id in held {
            if !done.contains(&id)
                && !failures.contains(&id)
                && let Some(r) = t.row(id)
            {
                r.status = JobStatus::Processing;
                r.claimed_at = Some(Instant::now());
            }
        }
        (mode == ClaimMode::InTransaction || !done.is_empty()) && t.reply_lost()
    }

    /// The open transaction's end without a commit: its jobs go back.
    fn roll_back(&mut self) {
        let held = std::mem::take(&mut self.held);
        self.held_failures.clear();
        lock(&self.table).give_back(&held);
    }
}

/// A dropped link is a crashed client: the server rolls its transaction back.
impl Drop for MemoryLink {
    fn drop(&mut self) {
        self.roll_back();
    }
}

fn lost_reply() -> BackendError {
    BackendError::new(
        ErrorClass::Connection,
        "the connection was lost before the commit's reply (a mishap of the in-memory queue)",
    )
}

#[async_trait]
impl Connection for MemoryLink {
    async fn close(self: Box<Self>) {}
}

#[async_trait]
impl Enqueue for MemoryLink {
    /// Every call gives way once, as a round trip to a server would: a producer in a
    /// closed loop must not hold its thread.
    async fn enqueue(&mut self, job: &NewJob) -> Result<JobId, BackendError> {
        let slow = self.table().mishaps.slow_inserts;
        match slow {
            Some(d) => tokio::time::sleep(d).await,
            None => tokio::task::yield_now().await,
        }
        Ok(self.table().insert(job))
    }

    async fn enqueue_batch(&mut self, jobs: &[NewJob]) -> Result<Vec<JobId>, BackendError> {
        let mut t = self.table();
        Ok(jobs.iter().map(|j| t.insert(j)).collect())
    }
}

#[async_trait]
impl Work for MemoryLink {
    async fn claim(&mut self, mode: ClaimMode) -> Result<Vec<ClaimedJob>, BackendError> {
        let jobs = self.take(mode);
        if mode == ClaimMode::InTransaction {
            self.held.extend(jobs.iter().map(|j| j.id));
        }
        tokio::task::yield_now().await;
        Ok(jobs)
    }

    async fn idle(&mut self, _mode: ClaimMode) -> Result<(), BackendError> {
        // An empty claim holds nothing; a worker that polls in a loop gives way.
        tokio::task::yield_now().await;
        Ok(())
    }

    async fn fail(&mut self, id: JobId, _error: &str) -> Result<FailOutcome, BackendError> {
        let mut t = lock(&self.table);
        if self.held.contains(&id) {
            // Inside the claim's transaction: takes effect when it commits.
            self.held_failures.push(id);
            let retries = t.row(id).map_or(0, |r| r.retry_count);
            return Ok(match retries + 1 >= self.max_retries {
                true => FailOutcome::DeadLettered,
                false => FailOutcome::Retry,
            });
        }
        let outcome = t.fail(id, self.max_retries, &self.backoff);
        match t.reply_lost() {
            true => Err(lost_reply()),
            false => Ok(outcome),
        }
    }

    /// The seed's completion, unguarded: it always takes effect (never stale).
    async fn finish(
        &mut self,
        mode: ClaimMode,
        done: &[JobId],
    ) -> Result<Vec<JobId>, BackendError> {
        let lost = self.commit(mode, done);
        tokio::task::yield_now().await;
        if lost {
            Err(lost_reply())
        } else {
            Ok(Vec::new())
        }
    }

    async fn recover(&mut self, _mode: ClaimMode) -> bool {
        self.roll_back();
        true
    }

    async fn reap(
        &mut self,
        stale_after: Duration,
        count_as_attempt: bool,
    ) -> Result<Vec<(JobId, bool)>, BackendError> {
        Ok(self
            .table()
            .reap(stale_after, count_as_attempt, self.max_retries))
    }
}

#[async_trait]
impl Inspect for MemoryLink {
    async fn sample(&mut self, full: bool) -> Result<DbSample, BackendError> {
        let counts = self.status_counts().await?;
        let n = |s: JobStatus| {
            counts
                .iter()
                .find(|(k, _)| k == s.as_str())
                .map_or(0, |(_, n)| *n)
        };
        let total: i64 = counts.iter().map(|(_, n)| n).sum();
        Ok(DbSample {
            pending: n(JobStatus::Pending),
            processing: full.then(|| n(JobStatus::Processing)),
            done: full.then(|| n(JobStatus::Done)),
            dead_letter: full.then(|| n(JobStatus::DeadLetter)),
            held: total,
            ..DbSample::default()
        })
    }

    async fn table_stats(&mut self) -> Result<TableStats, BackendError> {
        let live = self.table().rows().count() as i64;
        Ok(TableStats {
            live_tuples: live,
            ..TableStats::default()
        })
    }

    async fn status_counts(&mut self) -> Result<Vec<(String, i64)>, BackendError> {
        let mut counts: BTreeMap<&'static str, i64> = BTreeMap::new();
        for (_, r) in self.table().rows() {
            *counts.entry(r.status.as_str()).or_default() += 1;
        }
        Ok(counts
            .into_iter()
            .map(|(k, n)| (k.to_string(), n))
            .collect())
    }

    async fn job_statuses(
        &mut self,
        ids: &[JobId],
    ) -> Result<Vec<(JobId, JobStatus, Option<i32>)>, BackendError> {
        let mut t = self.table();
        Ok(ids
            .iter()
            .filter_map(|id| t.row(*id).map(|r| (*id, r.status, Some(r.retry_count))))
            .collect())
    }

    async fn jobs_by_key(&mut self, keys: &[String]) -> Result<Vec<(JobId, String)>, BackendError> {
        #[derive(serde::Deserialize)]
        struct Key {
            k: Option<String>,
        }
        let t = self.table();
        Ok(t.rows()
            .filter_map(|(id, r)| {
                let key = serde_json::from_str::<Key>(&r.payload).ok()?.k?;
                keys.contains(&key).then_some((id, key))
            })
            .collect())
    }

    async fn table_mismatches(
        &mut self,
        ids: &[JobId],
        expected: &[&str],
    ) -> Result<Vec<TableMismatch>, BackendError> {
        let mut t = self.table();
        Ok(ids
            .iter()
            .zip(expected)
            .filter_map(|(id, want)| {
                let status = t.row(*id).map_or("missing", |r| r.status.as_str());
                let agrees =
                    JobStatus::parse(status).is_some_and(JobStatus::is_final) && status == *want;
                (!agrees).then(|| TableMismatch {
                    id: *id,
                    table_status: status.to_string(),
                    expected: want.to_string(),
                })
            })
            .collect())
    }

    async fn untracked_between(
        &mut self,
        known: &[JobId],
        from: JobId,
        to: JobId,
    ) -> Result<Vec<(JobId, String)>, BackendError> {
        let known: std::collections::HashSet<&JobId> = known.iter().collect();
        Ok(self
            .table()
            .rows()
            .filter(|(id, _)| (from..to).contains(id) && !known.contains(id))
            .map(|(id, r)| (id, r.status.as_str().to_string()))
            .collect())
    }
}

#[async_trait]
impl Audit for MemoryLink {
    async fn audited_completions(
        &mut self,
        from: JobId,
        to: JobId,
    ) -> Result<Vec<(JobId, i64)>, BackendError> {
        Ok(self
            .table()
            .rows()
            .filter(|(id, r)| (from..to).contains(id) && r.completions > 0)
            .map(|(id, r)| (id, r.completions))
            .collect())
    }
}

#[async_trait]
impl Bystand for MemoryLink {
    async fn install_bystander(&mut self, rows: u32) -> Result<(), BackendError> {
        self.table().bystander = vec![0; rows as usize];
        Ok(())
    }

    async fn bystander_read(&mut self, id: i64) -> Result<(), BackendError> {
        let found = self.table().bystander.get((id - 1) as usize).is_some();
        found
            .then_some(())
            .ok_or_else(|| BackendError::new(ErrorClass::Permanent, "no such bystander row"))
    }

    async fn bystander_update(&mut self, id: i64) -> Result<(), BackendError> {
        match self.table().bystander.get_mut((id - 1) as usize) {
            Some(counter) => {
                *counter += 1;
                Ok(())
            }
            None => Err(BackendError::new(
                ErrorClass::Permanent,
                "no such bystander row",
            )),
        }
    }
}

impl crate::backend::seam::Link for MemoryLink {
    fn bystander(&mut self) -> Option<&mut dyn crate::backend::seam::Bystand> {
        Some(self)
    }
    fn audit(&mut self) -> Option<&mut dyn Audit> {
        Some(self)
    }
}
