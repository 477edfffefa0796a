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

use crate::backend::{JobStatus, Link, Loss, Stranger, TableMismatch};
use crate::metrics::{Event, IdSet, JobId, Ledger, LedgerEntry};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use verdict::Findings;

mod outbox;
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

/// A stretch of the id space: this step's committed jobs in it, and every id known to the
/// harness in it (this step's and earlier steps'), for the untracked-row check.
struct Chunk {
    jobs: Vec<(JobId, LedgerEntry)>,
    known: Vec<JobId>,
    from: JobId,
    /// Exclusive; `JobId::MAX` for the last chunk.
    to: JobId,
}

/// Cuts the merged, ordered ids of this step and earlier ones into chunks.
struct Chunks<A: Iterator<Item = (JobId, LedgerEntry)>, B: Iterator<Item = JobId>> {
    step: std::iter::Peekable<A>,
    earlier: std::iter::Peekable<B>,
    /// Where the next chunk starts; `None` once the last chunk was cut.
    from: Option<JobId>,
}

impl<A: Iterator<Item = (JobId, LedgerEntry)>, B: Iterator<Item = JobId>> Chunks<A, B> {
    fn next_chunk(&mut self) -> Option<Chunk> {
        let from = self.from?;
        let mut chunk = Chunk {
            jobs: Vec::new(),
            known: Vec::new(),
            from,
            to: JobId::MAX,
        };
        while chunk.known.len() < CHUNK {
            let step_next = self.step.peek().map(|(id, _)| *id);
            let earlier_next = self.earlier.peek().copied();
            let from_step = match (step_next, earlier_next) {
                (Some(s), Some(e)) => s <= e,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            if from_step {
                let job = self.step.next().expect("peeked");
                if earlier_next == step_next {
                    self.earlier.next();
                }
                chunk.known.push(job.0);
                chunk.jobs.push(job);
            } else {
                chunk.known.push(self.earlier.next().expect("peeked"));
            }
        }
        let next = match (self.step.peek(), self.earlier.peek()) {
            (Some((s, _)), Some(e)) => Some((*s).min(*e)),
            (Some((s, _)), None) => Some(*s),
            (None, e) => e.copied(),
        };
        chunk.to = next.unwrap_or(JobId::MAX);
        self.from = next;
        Some(chunk)
    }
}

/// What the completion audit recorded, against the jobs that finished `done`.
#[derive(Default)]
struct AuditTally {
    /// Jobs it saw completed more than once: (id, completions).
    duplicates: BTreeMap<JobId, i64>,
    /// Jobs that both views show `done` and that it never saw completed.
    missed: BTreeSet<JobId>,
}

impl AuditTally {
    /// One chunk: `audited` is what the audit holds for the chunk's id range (earlier steps'
    /// jobs are not this step's).
    fn add(
        &mut self,
        jobs: &[(JobId, LedgerEntry)],
        mismatches: &[TableMismatch],
        audited: Vec<(JobId, i64)>,
        earlier: &EarlierSteps,
    ) {
        let audited: BTreeMap<JobId, i64> = audited
            .into_iter()
            .filter(|(id, _)| !earlier.contains(*id))
            .collect();
        self.duplicates.extend(
            audited
                .iter()
                .filter(|(_, n)| **n > 1)
                .map(|(id, n)| (*id, *n)),
        );
        let disputed: BTreeSet<JobId> = mismatches.iter().map(|m| m.id).collect();
        self.missed.extend(
            jobs.iter()
                .filter(|(id, e)| {
                    e.completions > 0 && !disputed.contains(id) && !audited.contains_key(id)
                })
                .map(|(id, _)| *id),
        );
    }
}

/// The proof's findings so far, kept to the size of the problems found.
#[derive(Default)]
struct Tally {
    /// With `verify.completion_audit`: what the audit recorded.
    audit: Option<AuditTally>,
    committed: u64,
    ledger_lost: BTreeSet<JobId>,
    table_lost: BTreeSet<JobId>,
    unfinished: u64,
    /// Jobs neither lost nor unfinished, by how they ended.
    done: u64,
    dead_lettered: u64,
    stuck: BTreeSet<JobId>,
    finished_differently: u64,
    disagreements: Vec<JobProblem>,
    ledger_dups: BTreeSet<JobId>,
    /// A library's workers: jobs its handler reported successful more than once.
    repeated_successes: BTreeSet<JobId>,
    /// The ledger's completions are a library's handler reports (see [`ProofOptions`]).
    library: bool,
    /// A library's successes its table does not show done: (id, table status).
    unrecorded: BTreeMap<JobId, String>,
    /// Jobs run more often than their retries explain, and those no cause explains.
    repeated: BTreeSet<JobId>,
    unexplained: BTreeSet<JobId>,
    /// The queue promises at least once for completions: repeats are counted, not failures.
    at_least_once: bool,
    extra_executions: u64,
    unexplained_executions: u64,
    stale_outcomes: u64,
    finished_without_report: u64,
    untracked: Vec<JobProblem>,
    untracked_count: u64,
    /// Records the queue holds that the harness never produced.
    strangers: Vec<Stranger>,
    /// What the queue's records tell of lost jobs, where they can.
    losses: BTreeMap<JobId, Loss>,
    /// The table's view of each problem job that the table does not show as expected.
    table_views: BTreeMap<JobId, String>,
}

/// A table status (or `missing`) that no worker will change again.
fn finished(s: &str) -> bool {
    JobStatus::parse(s).is_some_and(JobStatus::is_final)
}

impl Tally {
    fn add(
        &mut self,
        jobs: &[(JobId, LedgerEntry)],
        mismatches: &[TableMismatch],
        untracked: Vec<(JobId, String)>,
        drained: bool,
    ) {
        let queued = |s: &str| JobStatus::parse(s).is_some_and(|s| !s.is_final());
        let mut unfinished = BTreeSet::new();
        let mut in_flight = BTreeSet::new();
        for m in mismatches {
            if !drained && m.expected == "open" && queued(&m.table_status) {
                unfinished.insert(m.id);
                if JobStatus::parse(&m.table_status) == Some(JobStatus::Processing) {
                    in_flight.insert(m.id);
                }
                continue;
            }
            self.table_views.insert(m.id, m.table_status.clone());
            if self.library && m.expected == "done" && queued(&m.table_status) {
                self.unrecorded.insert(m.id, m.table_status.clone());
            } else if !finished(&m.table_status) {
                self.table_lost.insert(m.id);
            } else if m.expected != "open" {
                // Both views say finished, but not the same way (done vs dead_letter).
                self.finished_differently += 1;
                if self.disagreements.len() < LIST_LIMIT {
                    self.disagreements.push(JobProblem {
                        why: None,
                        id: m.id,
                        ledger: m.expected.clone(),
                        table: m.table_status.clone(),
                    });
                }
            }
        }
        self.unfinished += unfinished.len() as u64;
        for (id, e) in jobs {
            self.committed += 1;
            if !e.finished() && !unfinished.contains(id) {
                self.ledger_lost.insert(*id);
            }
            self.place(*id, e, &unfinished);
            // Every run of it ended with its worker's death: no one is running it now.
            if in_flight.contains(id) && e.claims > 0 && e.crashes >= e.claims {
                self.stuck.insert(*id);
            }
            if e.completions > 1 {
                self.ledger_dups.insert(*id);
            }
            let (extra, unexplained) = (e.extra_executions(), e.unexplained_executions());
            if extra > 0 {
                self.repeated.insert(*id);
            }
            if unexplained > 0 {
                self.unexplained.insert(*id);
            }
            self.extra_executions += extra as u64;
            self.unexplained_executions += unexplained as u64;
            self.stale_outcomes += e.stale as u64;
            self.finished_without_report += e.resolved_from_table as u64;
        }
        self.untracked_count += untracked.len() as u64;
        let room = LIST_LIMIT.saturating_sub(self.untracked.len());
        self.untracked.extend(
            untracked
                .into_iter()
                .take(room)
                .map(|(id, status)| JobProblem {
                    why: None,
                    id,
                    ledger: "never committed".into(),
                    table: status,
                }),
        );
    }

    /// Executions and completions beyond one, and the stale outcomes.
    fn executions(&self, dup_ids: &BTreeSet<JobId>) -> Duplicates {
        Duplicates {
            extra_executions: self.extra_executions,
            unexplained_executions: self.unexplained_executions,
            completions: dup_ids.len() as u64,
            stale_outcomes: self.stale_outcomes,
            repeated_successes: self.repeated_successes.len() as u64,
            repeated_jobs: self.repeated.iter().copied().collect(),
            unexplained_jobs: self.unexplained.iter().copied().collect(),
            at_least_once: self.at_least_once,
        }
    }

    /// The lost jobs and the duplicates, first [`LIST_LIMIT`] of each, each with what both
    /// views say of it.
    fn name(
        &self,
        ledger: &Ledger,
        audited: Option<&BTreeMap<JobId, i64>>,
        lost_ids: &BTreeSet<JobId>,
        dup_ids: &BTreeSet<JobId>,
    ) -> (Vec<JobProblem>, Vec<JobProblem>) {
        let ledger_view = |id: JobId| match ledger.get(id) {
            Some(e) if e.completions > 1 => format!("done x{}", e.completions),
            Some(e) => e.expected_status().to_string(),
            None => "unknown".to_string(),
        };
        // Jobs the table did not report are in exactly the state the ledger expects.
        let table_view = |id: JobId| {
            self.table_views.get(&id).cloned().unwrap_or_else(|| {
                ledger
                    .get(id)
                    .map_or("?", |e| e.expected_status())
                    .to_string()
            })
        };
        let audit_view = |id: JobId| match audited.and_then(|a| a.get(&id)) {
            Some(n) => format!("done x{n}"),
            None => table_view(id),
        };
        let list = |ids: &BTreeSet<JobId>, view: &dyn Fn(JobId) -> String| -> Vec<JobProblem> {
            ids.iter()
                .take(LIST_LIMIT)
                .map(|&id| JobProblem {
                    id,
                    ledger: ledger_view(id),
                    table: view(id),
                    why: self.losses.get(&id).map(|l| l.why.clone()),
                })
                .collect()
        };
        (list(lost_ids, &table_view), list(dup_ids, &audit_view))
    }

    /// The jobs completed more than once: the audit's (the table's) and the ledger's. Without
    /// an audit the system keeps no record of completions (a broker): after a redelivery the
    /// ledger cannot tell a second completion that took effect from a first acknowledgement
    /// the broker lost in a crash, so only an unexplained one counts.
    fn duplicate_ids(
        &self,
        ledger: &Ledger,
        table_dups: Option<&BTreeSet<JobId>>,
    ) -> BTreeSet<JobId> {
        let mut dup_ids: BTreeSet<JobId> = match table_dups {
            Some(_) => self.ledger_dups.clone(),
            None => self
                .ledger_dups
                .iter()
                .filter(|id| ledger.get(**id).is_none_or(|e| e.reaps == 0))
                .copied()
                .collect(),
        };
        dup_ids.extend(table_dups.into_iter().flatten());
        dup_ids
    }

    /// What each view counted: the ledger's, and the table's (its duplicates from the audit).
    fn view_counts(&self, table_dups: Option<&BTreeSet<JobId>>) -> (ViewCounts, ViewCounts) {
        (
            ViewCounts {
                lost: self.ledger_lost.len() as u64,
                duplicate_completions: Some(self.ledger_dups.len() as u64),
            },
            ViewCounts {
                lost: self.table_lost.len() as u64,
                duplicate_completions: table_dups.map(|t| t.len() as u64),
            },
        )
    }

    /// Counts a job that is neither lost nor unfinished by how it ended.
    fn place(&mut self, id: JobId, e: &LedgerEntry, unfinished: &BTreeSet<JobId>) {
        if unfinished.contains(&id)
            || self.unrecorded.contains_key(&id)
            || self.ledger_lost.contains(&id)
            || self.table_lost.contains(&id)
        {
            return;
        }
        match e.expected_status() {
            "dead_letter" => self.dead_lettered += 1,
            _ => self.done += 1,
        }
    }

    /// The first [`LIST_LIMIT`] successes the library never recorded, with both views.
    fn unrecorded_named(&self, ledger: &Ledger) -> Vec<JobProblem> {
        self.unrecorded
            .iter()
            .take(LIST_LIMIT)
            .map(|(&id, table)| JobProblem {
                id,
                ledger: ledger
                    .get(id)
                    .map_or("done", |e| e.expected_status())
                    .into(),
                table: table.clone(),
                why: None,
            })
            .collect()
    }

    /// What the completion audit found: the jobs it saw completed more than once (none
    /// without an audit), and the finished jobs it never saw completed.
    fn audit_findings(&mut self) -> (Option<BTreeMap<JobId, i64>>, Vec<JobId>) {
        let audit = self.audit.take();
        let missed = audit
            .iter()
            .flat_map(|a| a.missed.iter().copied())
            .collect();
        (audit.map(|a| a.duplicates), missed)
    }

    /// Jobs completed more than once that a stranger's record names.
    fn strangers_duplicated(&self, dup_ids: &BTreeSet<JobId>) -> usize {
        let theirs: BTreeSet<JobId> = self.strangers.iter().filter_map(|s| s.job).collect();
        dup_ids.intersection(&theirs).count()
    }

    fn conclude(mut self, ledger: &Ledger, outbox: Option<OutboxProof>) -> AccountingProof {
        let (audited, audit_missed) = self.audit_findings();
        let lost_ids: BTreeSet<JobId> = self.ledger_lost.union(&self.table_lost).copied().collect();
        let table_dups: Option<BTreeSet<JobId>> =
            audited.as_ref().map(|rows| rows.keys().copied().collect());
        let dup_ids = self.duplicate_ids(ledger, table_dups.as_ref());
        let executions = self.executions(&dup_ids);
        let (lost, duplicates) = self.name(ledger, audited.as_ref(), &lost_ids, &dup_ids);
        let views_agree = self.ledger_lost == self.table_lost
            && self.finished_differently == 0
            && table_dups.as_ref().is_none_or(|t| *t == self.ledger_dups);
        let repeats_allowed = executions.at_least_once;
        let unrecorded = self.unrecorded_named(ledger);
        let sound = lost_ids.is_empty()
            && unrecorded.is_empty()
            && self.strangers.is_empty()
            && audit_missed.is_empty()
            && (repeats_allowed
                || executions.completions == 0 && executions.unexplained_executions == 0)
            && views_agree
            && outbox.as_ref().is_none_or(|o| o.ok);
        let ok = sound && self.unfinished == 0;
        let (ledger_counts, table_counts) = self.view_counts(table_dups.as_ref());
        let stuck: Vec<JobId> = self.stuck.iter().copied().collect();
        let by_queue: Vec<&Loss> = self.losses.values().filter(|l| l.by_queue).collect();
        let verdict = Findings {
            lost_by_queue: &by_queue,
            stuck: &stuck,
            committed: self.committed as usize,
            ledger: &ledger_counts,
            table: &table_counts,
            agree: views_agree,
            lost: &lost,
            unrecorded: &unrecorded,
            unrecorded_count: self.unrecorded.len(),
            duplicates: &duplicates,
            executions: &executions,
            unfinished: self.unfinished as usize,
            untracked: self.untracked_count as usize,
            audit_missed: &audit_missed,
            outbox: outbox.as_ref(),
            strangers: &self.strangers,
            strangers_duplicated: self.strangers_duplicated(&dup_ids),
        }
        .line();
        AccountingProof {
            ok,
            sound,
            committed: self.committed,
            ledger: ledger_counts,
            table: table_counts,
            views_agree,
            lost_total: lost_ids.len() as u64,
            lost_by_queue: by_queue.len() as u64,
            done: self.done,
            dead_lettered: self.dead_lettered,
            duplicate_total: dup_ids.len() as u64,
            lost,
            unrecorded_success_count: self.unrecorded.len() as u64,
            unrecorded_successes: unrecorded,
            disagreements: self.disagreements,
            duplicates,
            executions,
            unfinished: self.unfinished,
            stuck_count: self.stuck.len() as u64,
            stuck: self.stuck.iter().take(LIST_LIMIT).copied().collect(),
            in_doubt_inserts: ledger.in_doubt_enqueues,
            in_doubt_inserts_committed: ledger.in_doubt_committed,
            finished_without_report: self.finished_without_report,
            untracked: self.untracked,
            untracked_count: self.untracked_count,
            audit_missed_count: audit_missed.len() as u64,
            audit_missed: audit_missed.into_iter().take(LIST_LIMIT).collect(),
            outbox,
            strangers_count: self.strangers.len() as u64,
            strangers: self.strangers.into_iter().take(LIST_LIMIT).collect(),
            verdict,
        }
    }
}

#[cfg(test)]
mod tests;
