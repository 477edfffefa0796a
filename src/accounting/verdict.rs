//! The proof's one-line verdict: what failed first, with the jobs it failed for (at most
//! five named), then what is worth knowing though nothing failed. All of the proof's wording
//! is here; the numbers come from the tally in mod.rs.

use super::{Duplicates, JobProblem, OutboxProof, ViewCounts};
use crate::backend::{Loss, Stranger};
use crate::metrics::JobId;

/// What the proof found, for its one-line verdict.
pub(super) struct Findings<'a> {
    pub(super) committed: usize,
    pub(super) ledger: &'a ViewCounts,
    pub(super) table: &'a ViewCounts,
    pub(super) agree: bool,
    pub(super) lost: &'a [JobProblem],
    /// A library's successes it never recorded (first 100), and their count.
    pub(super) unrecorded: &'a [JobProblem],
    pub(super) unrecorded_count: usize,
    /// What the queue's records tell of the lost jobs it lost itself.
    pub(super) lost_by_queue: &'a [&'a Loss],
    pub(super) duplicates: &'a [JobProblem],
    pub(super) executions: &'a Duplicates,
    pub(super) unfinished: usize,
    pub(super) stuck: &'a [JobId],
    pub(super) untracked: usize,
    pub(super) audit_missed: &'a [JobId],
    pub(super) outbox: Option<&'a OutboxProof>,
    pub(super) strangers: &'a [Stranger],
    /// Jobs completed more than once that a stranger's record names.
    pub(super) strangers_duplicated: usize,
}

/// Up to five jobs by id, with what each view says of them.
fn name(ps: &[JobProblem]) -> String {
    let shown: Vec<String> = ps
        .iter()
        .take(5)
        .map(|p| format!("id {} (ledger {}, table {})", p.id, p.ledger, p.table))
        .collect();
    let more = if ps.len() > 5 { ", …" } else { "" };
    format!("{}{more}", shown.join(", "))
}

/// Up to five job ids, then how many more.
fn ids(ids: &[JobId]) -> String {
    let shown: Vec<String> = ids.iter().take(5).map(JobId::to_string).collect();
    match ids.len() {
        0..=5 => shown.join(", "),
        n => format!("{}, … ({} more)", shown.join(", "), n - 5),
    }
}

impl Findings<'_> {
    /// The records the harness never produced, up to five named.
    fn strangers_named(&self) -> String {
        let shown: Vec<String> = self
            .strangers
            .iter()
            .take(5)
            .map(|s| format!("{} ({})", s.place, s.why))
            .collect();
        let more = if self.strangers.len() > 5 {
            ", …"
        } else {
            ""
        };
        let dups = match self.strangers_duplicated {
            0 => String::new(),
            n => format!(
                "; {n} of the jobs completed more than once are theirs: a second worker ran the stranger, not the queue's at-least-once delivery"
            ),
        };
        format!(
            "{} record(s) in the queue the harness never produced, set apart from its jobs: {}{more}{dups}",
            self.strangers.len(),
            shown.join(", ")
        )
    }

    /// What failed, and the jobs it failed for.
    fn failures(&self, dup_table: &str) -> Vec<String> {
        let x = self.executions;
        let mut parts = vec![format!(
            "FAILED for {} committed jobs: lost {} (ledger) / {} (table), duplicate completions {} (ledger) / {dup_table} (table)",
            self.committed,
            self.ledger.lost,
            self.table.lost,
            self.ledger.duplicate_completions.unwrap_or(0)
        )];
        if !self.lost.is_empty() {
            parts.push(format!("lost: {}", name(self.lost)));
        }
        if self.unrecorded_count > 0 {
            parts.push(format!(
                "{} unrecorded success(es): the handler returned but the library never recorded the job done; its table shows it waiting or in flight, so it is back in the queue and will run again: {}",
                self.unrecorded_count,
                name(self.unrecorded)
            ));
        }
        if let [first, ..] = self.lost_by_queue {
            parts.push(format!(
                "{} of the lost jobs lost by the queue itself, not by the harness or its workers (job {}: {})",
                self.lost_by_queue.len(),
                first.job,
                first.why
            ));
        }
        if !self.duplicates.is_empty() {
            parts.push(format!("duplicates: {}", name(self.duplicates)));
        }
        if x.unexplained_executions > 0 {
            parts.push(format!(
                "{} execution(s) that no crash, rollback or reap explains (jobs {})",
                x.unexplained_executions,
                ids(&x.unexplained_jobs)
            ));
        }
        if !self.agree {
            parts.push("the ledger and the table disagree".into());
        }
        if !self.strangers.is_empty() {
            parts.push(self.strangers_named());
        }
        if let [first, ..] = self.audit_missed {
            parts.push(format!(
                "the completion audit recorded no completion for {} job(s) that finished done (first id {first}): the audit's trigger misses completions, so it cannot catch a duplicate",
                self.audit_missed.len()
            ));
        }
        if self.unfinished > 0 {
            parts.push(format!("{} job(s) still queued", self.unfinished));
        }
        parts
    }

    pub(super) fn line(&self) -> String {
        let dup_table = self
            .table
            .duplicate_completions
            .map_or("not checked".to_string(), |d| d.to_string());
        let x = self.executions;
        let dups_ok = x.at_least_once || x.completions == 0 && x.unexplained_executions == 0;
        let clean = self.lost.is_empty()
            && self.unrecorded_count == 0
            && dups_ok
            && self.agree
            && self.audit_missed.is_empty()
            && self.strangers.is_empty();
        let mut parts = Vec::new();
        if clean && self.unfinished == 0 {
            parts.push(format!(
                "all {} committed jobs finished (done or dead_letter); ledger and table agree: lost 0, duplicate completions {} (table: {dup_table})",
                self.committed, x.completions
            ));
        } else if clean {
            parts.push(format!(
                "queue not drained: {} of {} committed jobs still queued (unfinished in both views); none lost, duplicate completions {} (table: {dup_table})",
                self.unfinished, self.committed, x.completions
            ));
        } else {
            parts.extend(self.failures(&dup_table));
        }
        parts.extend(self.notes());
        parts.join("; ")
    }

    /// What is worth knowing though nothing failed: stuck and repeated runs, refused stale
    /// outcomes, the at-least-once allowance, the outbox, untracked rows.
    fn notes(&self) -> Vec<String> {
        let x = self.executions;
        let mut parts = Vec::new();
        if !self.stuck.is_empty() {
            let shown: Vec<String> = self.stuck.iter().take(5).map(JobId::to_string).collect();
            parts.push(format!(
                "{} of them stuck in flight: their worker died holding them and no worker ran them again (ids {}{})",
                self.stuck.len(),
                shown.join(", "),
                if self.stuck.len() > 5 { ", …" } else { "" }
            ));
        }
        if x.stale_outcomes > 0 {
            parts.push(format!(
                "{} stale completion(s) or failure update(s) refused by the design (the worker's claim had been reaped)",
                x.stale_outcomes
            ));
        }
        if x.extra_executions > 0 {
            let cause = match x.unexplained_executions {
                0 => "after a crash, rollback or reap".to_string(),
                n => format!(
                    "{} of them after a crash, rollback or reap",
                    x.extra_executions - n
                ),
            };
            parts.push(format!(
                "{} job run(s) repeated, {cause} (jobs {})",
                x.extra_executions,
                ids(&x.repeated_jobs)
            ));
        }
        let by_queue = x
            .completions
            .saturating_sub(self.strangers_duplicated as u64);
        if x.at_least_once && (by_queue > 0 || x.unexplained_executions > 0) {
            parts.push(format!(
                "{by_queue} job(s) completed more than once and {} run(s) repeated without a crash: the queue's at-least-once delivery (a rebalance handed their records to a second worker), allowed by the proof and counted in jobs.duplicate_completions (a threshold on it fails the run)",
                x.unexplained_executions
            ));
        }
        if x.repeated_successes > 0 {
            parts.push(format!(
                "{} job(s) whose handler succeeded more than once (the library ran them again)",
                x.repeated_successes
            ));
        }
        if let Some(o) = self.outbox {
            parts.push(if o.ok {
                format!("outbox: {} paid orders with one job each, {} rolled-back jobs never existed", o.paid_orders, o.rolled_back)
            } else {
                format!(
                    "outbox FAILED: {} rolled-back job(s) exist, {} order(s) without exactly one job",
                    o.rolled_back_jobs_found.len(),
                    o.bad_orders.len()
                )
            });
        }
        if self.untracked > 0 {
            parts.push(format!(
                "{} row(s) in the table were never seen committed",
                self.untracked
            ));
        }
        parts
    }
}
