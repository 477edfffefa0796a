//! The proof's tally: the ledger read in chunks of the id space and held against the table
//! (and the completion audit), each job's findings counted and named.

use super::verdict::Findings;
use super::{
    AccountingProof, CHUNK, Duplicates, EarlierSteps, JobProblem, LIST_LIMIT, OutboxProof,
    ViewCounts,
};
use crate::backend::{JobStatus, Loss, Stranger, TableMismatch};
use crate::metrics::{JobId, Ledger, LedgerEntry};
use std::collections::{BTreeMap, BTreeSet};

/// A stretch of the id space: this step's committed jobs in it, and every id known to the
/// harness in it (this step's and earlier steps'), for the untracked-row check.
pub(super) struct Chunk {
    pub(super) jobs: Vec<(JobId, LedgerEntry)>,
    pub(super) known: Vec<JobId>,
    pub(super) from: JobId,
    /// Exclusive; `JobId::MAX` for the last chunk.
    pub(super) to: JobId,
}

/// Cuts the merged, ordered ids of this step and earlier ones into chunks.
pub(super) struct Chunks<A: Iterator<Item = (JobId, LedgerEntry)>, B: Iterator<Item = JobId>> {
    pub(super) step: std::iter::Peekable<A>,
    pub(super) earlier: std::iter::Peekable<B>,
    /// Where the next chunk starts; `None` once the last chunk was cut.
    pub(super) from: Option<JobId>,
}

impl<A: Iterator<Item = (JobId, LedgerEntry)>, B: Iterator<Item = JobId>> Chunks<A, B> {
    pub(super) fn next_chunk(&mut self) -> Option<Chunk> {
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
pub(super) struct AuditTally {
    /// Jobs it saw completed more than once: (id, completions).
    pub(super) duplicates: BTreeMap<JobId, i64>,
    /// Jobs that both views show `done` and that it never saw completed.
    pub(super) missed: BTreeSet<JobId>,
}

impl AuditTally {
    /// One chunk: `audited` is what the audit holds for the chunk's id range (earlier steps'
    /// jobs are not this step's).
    pub(super) fn add(
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
pub(super) struct Tally {
    /// With `verify.completion_audit`: what the audit recorded.
    pub(super) audit: Option<AuditTally>,
    pub(super) committed: u64,
    pub(super) ledger_lost: BTreeSet<JobId>,
    pub(super) table_lost: BTreeSet<JobId>,
    pub(super) unfinished: u64,
    /// Jobs neither lost nor unfinished, by how they ended.
    pub(super) done: u64,
    pub(super) dead_lettered: u64,
    pub(super) stuck: BTreeSet<JobId>,
    pub(super) finished_differently: u64,
    pub(super) disagreements: Vec<JobProblem>,
    pub(super) ledger_dups: BTreeSet<JobId>,
    /// A library's workers: jobs its handler reported successful more than once.
    pub(super) repeated_successes: BTreeSet<JobId>,
    /// The ledger's completions are a library's handler reports (see [`ProofOptions`]).
    pub(super) library: bool,
    /// A library's successes its table does not show done: (id, table status).
    pub(super) unrecorded: BTreeMap<JobId, String>,
    /// Jobs run more often than their retries explain, and those no cause explains.
    pub(super) repeated: BTreeSet<JobId>,
    pub(super) unexplained: BTreeSet<JobId>,
    /// The queue promises at least once for completions: repeats are counted, not failures.
    pub(super) at_least_once: bool,
    pub(super) extra_executions: u64,
    pub(super) unexplained_executions: u64,
    pub(super) stale_outcomes: u64,
    pub(super) finished_without_report: u64,
    pub(super) untracked: Vec<JobProblem>,
    pub(super) untracked_count: u64,
    /// Records the queue holds that the harness never produced.
    pub(super) strangers: Vec<Stranger>,
    /// What the queue's records tell of lost jobs, where they can.
    pub(super) losses: BTreeMap<JobId, Loss>,
    /// The table's view of each problem job that the table does not show as expected.
    pub(super) table_views: BTreeMap<JobId, String>,
}

/// A table status (or `missing`) that no worker will change again.
pub(super) fn finished(s: &str) -> bool {
    JobStatus::parse(s).is_some_and(JobStatus::is_final)
}

impl Tally {
    pub(super) fn add(
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
    pub(super) fn executions(&self, dup_ids: &BTreeSet<JobId>) -> Duplicates {
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
    pub(super) fn name(
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
    pub(super) fn duplicate_ids(
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
    pub(super) fn view_counts(
        &self,
        table_dups: Option<&BTreeSet<JobId>>,
    ) -> (ViewCounts, ViewCounts) {
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
    pub(super) fn place(&mut self, id: JobId, e: &LedgerEntry, unfinished: &BTreeSet<JobId>) {
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
    pub(super) fn unrecorded_named(&self, ledger: &Ledger) -> Vec<JobProblem> {
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
    pub(super) fn audit_findings(&mut self) -> (Option<BTreeMap<JobId, i64>>, Vec<JobId>) {
        let audit = self.audit.take();
        let missed = audit
            .iter()
            .flat_map(|a| a.missed.iter().copied())
            .collect();
        (audit.map(|a| a.duplicates), missed)
    }

    /// Jobs completed more than once that a stranger's record names.
    pub(super) fn strangers_duplicated(&self, dup_ids: &BTreeSet<JobId>) -> usize {
        let theirs: BTreeSet<JobId> = self.strangers.iter().filter_map(|s| s.job).collect();
        dup_ids.intersection(&theirs).count()
    }

    pub(super) fn conclude(
        mut self,
        ledger: &Ledger,
        outbox: Option<OutboxProof>,
    ) -> AccountingProof {
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
        let unrecorded = self.unrecorded_named(ledger);
        let sound = views_agree
            && lost_ids.is_empty()
            && unrecorded.is_empty()
            && self.strangers.is_empty()
            && audit_missed.is_empty()
            && repeats_pass(&executions)
            && outbox.as_ref().is_none_or(|o| o.ok);
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
            ok: sound && self.unfinished == 0,
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

/// Repeats that do not fail the proof: none completed twice and none unexplained, or any at
/// all on a queue that promises at least once.
fn repeats_pass(executions: &Duplicates) -> bool {
    executions.at_least_once
        || executions.completions == 0 && executions.unexplained_executions == 0
}
