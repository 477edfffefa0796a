//! The accounting proof: after the drain, every job the harness saw committed must have
//! ended `done` or `dead_letter`, and the harness's ledger and the table must agree.
//!
//! Two independent views are compared:
//! - the ledger: what producers and workers reported (commits they saw succeed);
//! - the table: the rows of `job_queue`, and (with `verify.completion_audit`) the audit
//!   table the database itself writes on every transition to `done`/`dead_letter`.
//!
//! Any job that is lost in either view, finished differently in the two views, or
//! completed more than once is named by id.

use crate::metrics::{JobId, Ledger};
use crate::queue::{Queue, TableMismatch};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use sqlx::postgres::PgConnection;
use std::collections::{BTreeMap, BTreeSet};

/// At most this many jobs are listed per kind of problem (counts are always complete).
const LIST_LIMIT: usize = 100;

/// One job the proof could not account for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobProblem {
    pub id: JobId,
    /// What the ledger says: `done`, `dead_letter`, `open`, or `done xN`.
    pub ledger: String,
    /// What the table says: the row's status, `missing`, or `done xN` from the audit.
    pub table: String,
}

/// Counts from one view.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewCounts {
    /// Committed jobs not finished (`done`/`dead_letter`) in this view.
    pub lost: u64,
    /// Jobs completed more than once in this view (`None`: this view cannot tell).
    pub duplicate_completions: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountingProof {
    /// Every committed job finished, nothing completed twice, and both views agree.
    pub ok: bool,
    /// Jobs the harness saw committed.
    pub committed: u64,
    pub ledger: ViewCounts,
    pub table: ViewCounts,
    /// The two views name the same lost jobs, final states and duplicates.
    pub views_agree: bool,
    /// Jobs lost in either view (the union).
    pub lost_total: u64,
    /// Jobs completed more than once in either view (the union).
    pub duplicate_total: u64,
    /// Lost jobs (in either view), first 100.
    pub lost: Vec<JobProblem>,
    /// Jobs whose final state differs between the views (other than being lost), first 100.
    pub disagreements: Vec<JobProblem>,
    /// Jobs completed more than once (in either view), first 100.
    pub duplicates: Vec<JobProblem>,
    /// When the queue was not drained (Ctrl-C, drain timeout): jobs both views agree are
    /// still queued (`pending`/`processing`). Not lost, but not finished either.
    pub unfinished: u64,
    /// Rows in the table that no producer saw committed, first 100, and their count.
    pub untracked: Vec<JobProblem>,
    pub untracked_count: u64,
    /// One line saying what the proof found.
    pub verdict: String,
}

/// Runs the proof against the table behind `conn` (whose `search_path` is the run schema).
/// `drained` says whether consumers were given the chance to finish every job; when they
/// were not, jobs that both views agree are still queued count as unfinished, not lost.
pub async fn prove(
    conn: &mut PgConnection,
    queue: &Queue,
    ledger: &Ledger,
    audit: bool,
    drained: bool,
) -> Result<AccountingProof> {
    let committed = ledger.committed();
    let ids: Vec<JobId> = committed.iter().map(|(id, _)| *id).collect();
    let expected: Vec<&str> = committed.iter().map(|(_, e)| e.expected_status()).collect();

    let mismatches = queue
        .table_mismatches(conn, &ids, &expected)
        .await
        .context("accounting: reading job states")?;
    let untracked_rows = queue
        .untracked(conn, &ids)
        .await
        .context("accounting: looking for untracked rows")?;
    let audited: Option<BTreeMap<JobId, i64>> = if audit {
        let rows = queue
            .audited_duplicates(conn)
            .await
            .context("accounting: reading the completion audit")?;
        Some(rows.into_iter().collect())
    } else {
        None
    };
    let table_status: BTreeMap<JobId, &str> = mismatches
        .iter()
        .map(|m| (m.id, m.table_status.as_str()))
        .collect();

    let ledger_view = |id: JobId| match ledger.get(id) {
        Some(e) if e.completions > 1 => format!("done x{}", e.completions),
        Some(e) => e.expected_status().to_string(),
        None => "unknown".to_string(),
    };
    // Jobs absent from the mismatch rows are in exactly the state the ledger expects.
    let table_view = |id: JobId| {
        table_status.get(&id).map_or_else(
            || {
                ledger
                    .get(id)
                    .map_or("?", |e| e.expected_status())
                    .to_string()
            },
            |s| s.to_string(),
        )
    };
    let finished = |s: &str| s == "done" || s == "dead_letter";
    let queued = |s: &str| s == "pending" || s == "processing";

    let unfinished: BTreeSet<JobId> = if drained {
        BTreeSet::new()
    } else {
        mismatches
            .iter()
            .filter(|m| m.expected == "open" && queued(&m.table_status))
            .map(|m| m.id)
            .collect()
    };
    let ledger_lost: BTreeSet<JobId> = committed
        .iter()
        .filter(|(id, e)| !e.finished() && !unfinished.contains(id))
        .map(|(id, _)| *id)
        .collect();
    let table_lost: BTreeSet<JobId> = mismatches
        .iter()
        .filter(|m| !finished(&m.table_status) && !unfinished.contains(&m.id))
        .map(|m| m.id)
        .collect();
    let lost_ids: BTreeSet<JobId> = ledger_lost.union(&table_lost).copied().collect();
    // Both views say finished, but not the same way (done vs dead_letter).
    let finished_differently: Vec<&TableMismatch> = mismatches
        .iter()
        .filter(|m| finished(&m.table_status) && m.expected != "open")
        .collect();

    let ledger_dups: BTreeSet<JobId> = committed
        .iter()
        .filter(|(_, e)| e.completions > 1)
        .map(|(id, _)| *id)
        .collect();
    let table_dups: Option<BTreeSet<JobId>> =
        audited.as_ref().map(|rows| rows.keys().copied().collect());
    let mut dup_ids = ledger_dups.clone();
    dup_ids.extend(table_dups.iter().flatten());
    let audit_view = |id: JobId| match audited.as_ref().and_then(|a| a.get(&id)) {
        Some(n) => format!("done x{n}"),
        None => table_view(id),
    };

    let problem = |id: JobId, table: String| JobProblem {
        id,
        ledger: ledger_view(id),
        table,
    };
    let lost: Vec<JobProblem> = lost_ids
        .iter()
        .take(LIST_LIMIT)
        .map(|&id| problem(id, table_view(id)))
        .collect();
    let disagreements: Vec<JobProblem> = finished_differently
        .iter()
        .take(LIST_LIMIT)
        .map(|m| problem(m.id, m.table_status.clone()))
        .collect();
    let duplicates: Vec<JobProblem> = dup_ids
        .iter()
        .take(LIST_LIMIT)
        .map(|&id| problem(id, audit_view(id)))
        .collect();
    let untracked: Vec<JobProblem> = untracked_rows
        .iter()
        .take(LIST_LIMIT)
        .map(|(id, status)| JobProblem {
            id: *id,
            ledger: "never committed".into(),
            table: status.clone(),
        })
        .collect();

    let views_agree = ledger_lost == table_lost
        && finished_differently.is_empty()
        && table_dups.as_ref().is_none_or(|t| *t == ledger_dups);
    let ok = lost_ids.is_empty() && dup_ids.is_empty() && views_agree && unfinished.is_empty();

    let ledger_counts = ViewCounts {
        lost: ledger_lost.len() as u64,
        duplicate_completions: Some(ledger_dups.len() as u64),
    };
    let table_counts = ViewCounts {
        lost: table_lost.len() as u64,
        duplicate_completions: table_dups.as_ref().map(|t| t.len() as u64),
    };
    let verdict = Findings {
        committed: ids.len(),
        ledger: &ledger_counts,
        table: &table_counts,
        agree: views_agree,
        lost: &lost,
        duplicates: &duplicates,
        unfinished: unfinished.len(),
        untracked: untracked_rows.len(),
    }
    .line();

    Ok(AccountingProof {
        ok,
        committed: ids.len() as u64,
        ledger: ledger_counts,
        table: table_counts,
        views_agree,
        lost_total: lost_ids.len() as u64,
        duplicate_total: dup_ids.len() as u64,
        lost,
        disagreements,
        duplicates,
        unfinished: unfinished.len() as u64,
        untracked,
        untracked_count: untracked_rows.len() as u64,
        verdict,
    })
}

/// What the proof found, for its one-line verdict.
struct Findings<'a> {
    committed: usize,
    ledger: &'a ViewCounts,
    table: &'a ViewCounts,
    agree: bool,
    lost: &'a [JobProblem],
    duplicates: &'a [JobProblem],
    unfinished: usize,
    untracked: usize,
}

impl Findings<'_> {
    fn line(&self) -> String {
        let name = |ps: &[JobProblem]| {
            let shown: Vec<String> = ps
                .iter()
                .take(5)
                .map(|p| format!("id {} (ledger {}, table {})", p.id, p.ledger, p.table))
                .collect();
            let more = if ps.len() > 5 { ", …" } else { "" };
            format!("{}{more}", shown.join(", "))
        };
        let dup_table = self
            .table
            .duplicate_completions
            .map_or("not checked".to_string(), |d| d.to_string());
        let clean = self.lost.is_empty() && self.duplicates.is_empty() && self.agree;
        let mut parts = Vec::new();
        if clean && self.unfinished == 0 {
            parts.push(format!(
                "all {} committed jobs finished (done or dead_letter); ledger and table agree: lost 0, duplicate completions 0 (table: {dup_table})",
                self.committed
            ));
        } else if clean {
            parts.push(format!(
                "queue not drained: {} of {} committed jobs still queued (unfinished in both views); none lost, duplicate completions 0 (table: {dup_table})",
                self.unfinished, self.committed
            ));
        } else {
            parts.push(format!(
                "FAILED for {} committed jobs: lost {} (ledger) / {} (table), duplicate completions {} (ledger) / {dup_table} (table)",
                self.committed,
                self.ledger.lost,
                self.table.lost,
                self.ledger.duplicate_completions.unwrap_or(0)
            ));
            if !self.lost.is_empty() {
                parts.push(format!("lost: {}", name(self.lost)));
            }
            if !self.duplicates.is_empty() {
                parts.push(format!("duplicates: {}", name(self.duplicates)));
            }
            if !self.agree {
                parts.push("the ledger and the table disagree".into());
            }
            if self.unfinished > 0 {
                parts.push(format!("{} job(s) still queued", self.unfinished));
            }
        }
        if self.untracked > 0 {
            parts.push(format!(
                "{} row(s) in the table were never seen committed",
                self.untracked
            ));
        }
        parts.join("; ")
    }
}
