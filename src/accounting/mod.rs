//! The accounting proof: after the drain, every job the harness saw committed must have
//! ended `done` or `dead_letter`, and the harness's ledger and the table must agree.
//!
//! Two independent views are compared:
//! - the ledger: what producers and workers reported (commits they saw succeed);
//! - the table: the rows of `job_queue`, and (with `verify.completion_audit`) the audit
//!   table the database itself writes on every transition to `done`/`dead_letter`.
//!
//! Outcomes the harness could not see (a worker process killed right after a commit, a
//! connection that broke during a commit) are *in doubt*; [`settle`] asks the table how
//! they ended, by job id or, for inserts, by the unique key in the payload. Any job that is
//! lost in either view, finished differently in the two views, or completed more than once
//! is named by id.
//!
//! One rule for every design, engine and claim mode: a job may *run* again after a crash,
//! rollback or reap (at-least-once execution, counted), but it is *completed* once. A
//! completion that finished nothing (the worker's claim had been reaped, and the design's
//! guarded completion refused it) is a stale completion: counted, not a completion. A
//! second completion that took effect is a duplicate completion and fails the proof, in
//! both claim modes: the design let a worker that no longer held the job overwrite it. In outbox mode the proof also checks that no job of
//! a rolled-back business transaction exists and that every paid order has exactly one job.

use crate::backend::{Link, Stranger};
use crate::metrics::{Event, IdSet, JobId, Ledger};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

mod outbox;
mod tally;
use tally::{AuditTally, Chunks, Tally};
mod verdict;

pub use outbox::OutboxProof;

/// At most this many jobs are listed per kind of problem (counts are always complete).
const LIST_LIMIT: usize = 100;

/// Asks the table how in-doubt outcomes ended: inserts by key (found: committed), jobs by id
/// (finished: by whom the harness cannot tell, but finished). Keys not found are reported
/// as never committed only on the `final_pass`, when nothing can still be under way.
pub async fn settle(
    conn: &mut dyn Link,
    keys: &[String],
    jobs: &[JobId],
    at_us: u64,
    final_pass: bool,
) -> Result<Vec<Event>> {
    let mut events = Vec::new();
    if !keys.is_empty() {
        let found = conn
            .jobs_by_key(keys)
            .await
            .context("settling in-doubt inserts")?;
        let found_keys: BTreeSet<&str> = found.iter().map(|(_, k)| k.as_str()).collect();
        let missing: Vec<String> = keys
            .iter()
            .filter(|k| !found_keys.contains(k.as_str()))
            .cloned()
            .collect();
        for (id, key) in &found {
            events.push(Event::InsertFound {
                at_us,
                job: *id,
                key: key.clone(),
            });
        }
        if final_pass && !missing.is_empty() {
            events.push(Event::NeverCommitted { keys: missing });
        }
    }
    if !jobs.is_empty() {
        for (id, status, retry_count) in conn
            .job_statuses(jobs)
            .await
            .context("settling in-doubt jobs")?
        {
            // While workers run, only a finished job's state is final; on the last pass
            // every job's is, and its retry_count settles in-doubt failure updates.
            if final_pass || status.is_final() {
                events.push(Event::Resolved {
                    at_us,
                    job: id,
                    status,
                    // Read while workers run, a retry_count may be ahead of failure
                    // reports still on their way: only the last pass settles by it.
                    retry_count: retry_count.filter(|_| final_pass),
                });
            }
        }
    }
    Ok(events)
}

/// One job the proof could not account for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobProblem {
    pub id: JobId,
    /// What the ledger says: `done`, `dead_letter`, `open`, or `done xN`.
    pub ledger: String,
    /// What the table says: the row's status, `missing`, or `done xN` from the audit.
    pub table: String,
    /// A lost job: where its record went, as the queue's own records tell (Kafka).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// Counts from one view.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewCounts {
    /// Committed jobs not finished (`done`/`dead_letter`) in this view.
    pub lost: u64,
    /// Jobs completed more than once in this view (`None`: this view cannot tell).
    pub duplicate_completions: Option<u64>,
}

/// Jobs that ran more than once, judged against the claim mode.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Duplicates {
    /// Claims beyond the first that no failure update explains (the job ran again).
    pub extra_executions: u64,
    /// Of those, the ones no crash, rollback or reap explains (must be 0).
    pub unexplained_executions: u64,
    /// Jobs completed more than once (either view): none is allowed.
    pub completions: u64,
    /// Completions and failure updates that finished nothing because the job was no longer
    /// the worker's (its claim was reaped): the design refused them, as it should.
    #[serde(default)]
    pub stale_outcomes: u64,
    /// A library's workers: jobs whose handler returned success more than once (the
    /// library ran a job again after its first success, e.g. after a crash before it
    /// recorded it). At-least-once execution, counted; not a duplicate completion.
    #[serde(default)]
    pub repeated_successes: u64,
    /// Every job that ran more often than its retries explain (`extra_executions` counts
    /// the runs), in id order.
    #[serde(default)]
    pub repeated_jobs: Vec<JobId>,
    /// Of them, the jobs whose repeats no crash, rollback or reap explains.
    #[serde(default)]
    pub unexplained_jobs: Vec<JobId>,
    /// On a queue that promises at least once for completions (Kafka): jobs completed more
    /// than once, counted in `completions` too, and allowed, with the runs they repeat.
    #[serde(default)]
    pub at_least_once: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountingProof {
    /// Every committed job finished, no run repeated without a cause, nothing completed
    /// twice, both views
    /// agree, and the outbox (if any) kept its promises.
    pub ok: bool,
    /// As `ok`, except that jobs may still be queued (a run stopped before it drained):
    /// nothing lost, duplicated or disputed.
    #[serde(default)]
    pub sound: bool,
    /// Jobs the harness saw committed (including in-doubt inserts found in the table).
    pub committed: u64,
    pub ledger: ViewCounts,
    pub table: ViewCounts,
    /// The two views name the same lost jobs, final states and duplicates.
    pub views_agree: bool,
    /// Jobs lost in either view (the union).
    pub lost_total: u64,
    /// Of them, jobs the queue itself lost: it acknowledged their records and no longer
    /// holds them (a broker that lost its log), not the harness or the workers.
    #[serde(default)]
    pub lost_by_queue: u64,
    /// Jobs that ended `done` and `dead_letter` (each job once, however many reports it
    /// had; by the ledger where the views disagree on how it finished). Every committed
    /// job is in one place: done + dead_lettered + unfinished + lost_total +
    /// unrecorded_success_count = committed.
    #[serde(default)]
    pub done: u64,
    #[serde(default)]
    pub dead_lettered: u64,
    /// Jobs completed more than once in either view (the union).
    pub duplicate_total: u64,
    /// Lost jobs (in either view), first 100.
    pub lost: Vec<JobProblem>,
    /// A library's workers: jobs whose handler returned success that the library never
    /// recorded (its table shows them waiting or in flight: they will run again), first
    /// 100, and their count. Not lost, not done: the proof fails on them.
    #[serde(default)]
    pub unrecorded_successes: Vec<JobProblem>,
    #[serde(default)]
    pub unrecorded_success_count: u64,
    /// Jobs whose final state differs between the views (other than being lost), first 100.
    pub disagreements: Vec<JobProblem>,
    /// Jobs completed more than once (in either view), first 100.
    pub duplicates: Vec<JobProblem>,
    pub executions: Duplicates,
    /// When the queue was not drained (Ctrl-C, drain timeout): jobs both views agree are
    /// still queued (`pending`/`processing`). Not lost, but not finished either.
    pub unfinished: u64,
    /// Of the unfinished, jobs still in flight (`processing`) whose worker died holding them
    /// and that no worker ran again: stuck until the queue's rescue, if it has one, takes
    /// them back (first 100, and their count).
    #[serde(default)]
    pub stuck: Vec<JobId>,
    #[serde(default)]
    pub stuck_count: u64,
    /// In-doubt outcomes settled from the table: inserts found committed, and jobs found
    /// finished without a report from their worker.
    pub in_doubt_inserts: u64,
    pub in_doubt_inserts_committed: u64,
    pub finished_without_report: u64,
    /// Rows in the table that no producer saw committed, first 100, and their count.
    pub untracked: Vec<JobProblem>,
    pub untracked_count: u64,
    /// Jobs both views show `done` that the completion audit never saw completed (first
    /// 100), and their count: an audit that misses completions cannot count duplicates.
    #[serde(default)]
    pub audit_missed: Vec<JobId>,
    #[serde(default)]
    pub audit_missed_count: u64,
    pub outbox: Option<OutboxProof>,
    /// Records the queue holds that the harness never produced (first 100), and their
    /// count: written by someone else into the run's topics. Their runs are not the
    /// queue's, so the proof fails.
    #[serde(default)]
    pub strangers: Vec<Stranger>,
    #[serde(default)]
    pub strangers_count: u64,
    /// One line saying what the proof found.
    pub verdict: String,
}

/// What the proof needs to know about the run.
#[derive(Debug, Clone, Copy)]
pub struct ProofOptions {
    /// The completion audit table exists.
    pub audit: bool,
    /// Consumers were given the chance to finish every job.
    pub drained: bool,
    pub outbox: bool,
    /// The ledger's completions are a queue library's handler reports, sent before the
    /// library records the job done: a second one is a run repeated to success (counted),
    /// not a duplicate completion; the table and its audit say what the library recorded.
    pub reported_by_library: bool,
    /// The queue promises at least once for completions
    /// ([`crate::backend::engine::Supports::at_least_once_completions`]): repeated runs and
    /// completions are counted, not failures.
    pub at_least_once: bool,
}

/// Jobs that earlier load steps on the same queue committed and proved: rows the table may
/// still hold that are not this step's, so neither untracked nor this step's duplicates.
#[derive(Debug, Clone, Default)]
pub struct EarlierSteps {
    ids: IdSet,
}

impl EarlierSteps {
    pub fn contains(&self, id: JobId) -> bool {
        self.ids.contains(id)
    }

    /// Adds a proved step's jobs.
    pub fn extend(&mut self, ledger: &Ledger) {
        for (id, _) in ledger.committed() {
            self.ids.insert(id);
        }
    }
}

/// Committed jobs checked against the table per round trip: the proof's memory and each
/// statement's size stay bounded however long the run.
const CHUNK: usize = 50_000;

/// Settles what is still in doubt (and asks again about jobs that finished after an outcome
/// was in doubt), then runs the proof against the table behind `conn`
/// (whose `search_path` is the run schema), in chunks of the id space. The ledger is
/// updated with the settlement.
pub async fn prove(
    conn: &mut dyn Link,
    ledger: &mut Ledger,
    opts: ProofOptions,
    earlier: &EarlierSteps,
) -> Result<AccountingProof> {
    let (keys, mut jobs) = ledger.unresolved();
    jobs.extend(ledger.doubted_finished());
    for event in settle(conn, &keys, &jobs, 0, true).await? {
        ledger.settle(&event);
    }
    let ledger: &Ledger = ledger;
    let outbox = if opts.outbox {
        Some(outbox::outbox_proof(conn, ledger).await?)
    } else {
        None
    };
    let mut tally = Tally {
        audit: opts.audit.then(AuditTally::default),
        library: opts.reported_by_library,
        ..Tally::default()
    };
    let mut chunks = Chunks {
        step: ledger.committed().peekable(),
        earlier: earlier.ids.iter().peekable(),
        from: Some(JobId::MIN),
    };
    while let Some(chunk) = chunks.next_chunk() {
        let ids: Vec<JobId> = chunk.jobs.iter().map(|(id, _)| *id).collect();
        let expected: Vec<&str> = chunk
            .jobs
            .iter()
            .map(|(_, e)| e.expected_status())
            .collect();
        let mismatches = conn
            .table_mismatches(&ids, &expected)
            .await
            .context("accounting: reading job states")?;
        let untracked = conn
            .untracked_between(&chunk.known, chunk.from, chunk.to)
            .await
            .context("accounting: looking for untracked rows")?;
        if let Some(audit) = &mut tally.audit {
            let reader = conn
                .audit()
                .context("accounting: this engine keeps no completion audit")?;
            let audited = reader
                .audited_completions(chunk.from, chunk.to)
                .await
                .context("accounting: reading the completion audit")?;
            audit.add(&chunk.jobs, &mismatches, audited, earlier);
        }
        tally.add(&chunk.jobs, &mismatches, untracked, opts.drained);
    }
    tally.at_least_once = opts.at_least_once;
    if let Some(p) = conn.provenance() {
        tally.strangers = p
            .strangers()
            .await
            .context("accounting: looking for records the harness never produced")?;
    }
    let lost: Vec<JobId> = tally
        .ledger_lost
        .union(&tally.table_lost)
        .copied()
        .collect();
    if let Some(p) = conn.provenance().filter(|_| !lost.is_empty()) {
        let losses = p
            .losses(&lost)
            .await
            .context("accounting: asking the queue where the lost jobs' records went")?;
        tally.losses = losses.into_iter().map(|l| (l.job, l)).collect();
    }
    if opts.reported_by_library {
        tally.repeated_successes = std::mem::take(&mut tally.ledger_dups);
    }
    Ok(tally.conclude(ledger, outbox))
}

#[cfg(test)]
mod tests;
