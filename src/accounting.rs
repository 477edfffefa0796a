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
use crate::queue::Queue;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use sqlx::postgres::PgConnection;
use std::collections::BTreeSet;

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
    /// Lost jobs (in either view), first 100.
    pub lost: Vec<JobProblem>,
    /// Jobs whose final state differs between the views (other than being lost), first 100.
    pub disagreements: Vec<JobProblem>,
    /// Jobs completed more than once (in either view), first 100.
    pub duplicates: Vec<JobProblem>,
    /// Rows in the table that no producer saw committed, first 100, and their count.
    pub untracked: Vec<JobProblem>,
    pub untracked_count: u64,
    /// One line saying what the proof found.
    pub verdict: String,
}

impl AccountingProof {
    /// Lost jobs in the union of both views.
    pub fn lost_count(&self) -> u64 {
        self.ledger.lost.max(self.table.lost)
    }

    pub fn duplicate_count(&self) -> u64 {
        self.ledger
            .duplicate_completions
            .unwrap_or(0)
            .max(self.table.duplicate_completions.unwrap_or(0))
    }
}

/// Runs the proof against the table behind `conn` (whose `search_path` is the run schema).
pub async fn prove(
    conn: &mut PgConnection,
    queue: &Queue,
    ledger: &Ledger,
    audit: bool,
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
    let audited = if audit {
        Some(
            queue
                .audited_duplicates(conn)
                .await
                .context("accounting: reading the completion audit")?,
        )
    } else {
        None
    };

    let ledger_view = |id: JobId| {
        ledger
            .get(id)
            .map_or("unknown".to_string(), |e| match e.completions {
                n if n > 1 => format!("done x{n}"),
                _ => e.expected_status().to_string(),
            })
    };
    let finished = |s: &str| s == "done" || s == "dead_letter";

    let ledger_lost: BTreeSet<JobId> = committed
        .iter()
        .filter(|(_, e)| !e.finished())
        .map(|(id, _)| *id)
        .collect();
    let table_lost: BTreeSet<JobId> = mismatches
        .iter()
        .filter(|m| !finished(&m.table_status))
        .map(|m| m.id)
        .collect();
    let lost_ids: BTreeSet<JobId> = ledger_lost.union(&table_lost).copied().collect();
    let table_status = |id: JobId| {
        mismatches.iter().find(|m| m.id == id).map_or_else(
            || {
                ledger
                    .get(id)
                    .map_or("?", |e| e.expected_status())
                    .to_string()
            },
            |m| m.table_status.clone(),
        )
    };
    let lost: Vec<JobProblem> = lost_ids
        .iter()
        .take(LIST_LIMIT)
        .map(|&id| JobProblem {
            id,
            ledger: ledger_view(id),
            table: table_status(id),
        })
        .collect();
    let disagreements: Vec<JobProblem> = mismatches
        .iter()
        .filter(|m| finished(&m.table_status) && m.expected != "open")
        .take(LIST_LIMIT)
        .map(|m| JobProblem {
            id: m.id,
            ledger: ledger_view(m.id),
            table: m.table_status.clone(),
        })
        .collect();
    let finished_differently = mismatches
        .iter()
        .filter(|m| finished(&m.table_status) && m.expected != "open")
        .count();

    let ledger_dups: BTreeSet<JobId> = committed
        .iter()
        .filter(|(_, e)| e.completions > 1)
        .map(|(id, _)| *id)
        .collect();
    let table_dups: Option<BTreeSet<JobId>> = audited
        .as_ref()
        .map(|rows| rows.iter().map(|(id, _)| *id).collect());
    let audit_count = |id: JobId| {
        audited
            .as_ref()
            .and_then(|rows| rows.iter().find(|(i, _)| *i == id))
            .map_or("done".to_string(), |(_, n)| format!("done x{n}"))
    };
    let dup_ids: BTreeSet<JobId> = ledger_dups
        .union(table_dups.as_ref().unwrap_or(&BTreeSet::new()))
        .copied()
        .collect();
    let duplicates: Vec<JobProblem> = dup_ids
        .iter()
        .take(LIST_LIMIT)
        .map(|&id| JobProblem {
            id,
            ledger: ledger_view(id),
            table: audit_count(id),
        })
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
        && finished_differently == 0
        && table_dups.as_ref().is_none_or(|t| *t == ledger_dups);
    let ok = lost_ids.is_empty() && dup_ids.is_empty() && views_agree;

    let ledger_counts = ViewCounts {
        lost: ledger_lost.len() as u64,
        duplicate_completions: Some(ledger_dups.len() as u64),
    };
    let table_counts = ViewCounts {
        lost: table_lost.len() as u64,
        duplicate_completions: table_dups.as_ref().map(|t| t.len() as u64),
    };
    let verdict = verdict_line(
        ok,
        ids.len(),
        &ledger_counts,
        &table_counts,
        views_agree,
        &lost,
        &duplicates,
        untracked_rows.len(),
    );

    Ok(AccountingProof {
        ok,
        committed: ids.len() as u64,
        ledger: ledger_counts,
        table: table_counts,
        views_agree,
        lost,
        disagreements,
        duplicates,
        untracked,
        untracked_count: untracked_rows.len() as u64,
        verdict,
    })
}

#[allow(clippy::too_many_arguments)]
fn verdict_line(
    ok: bool,
    committed: usize,
    ledger: &ViewCounts,
    table: &ViewCounts,
    agree: bool,
    lost: &[JobProblem],
    dups: &[JobProblem],
    untracked: usize,
) -> String {
    let name = |ps: &[JobProblem]| {
        let shown: Vec<String> = ps
            .iter()
            .take(5)
            .map(|p| format!("id {} (ledger {}, table {})", p.id, p.ledger, p.table))
            .collect();
        let more = if ps.len() > 5 { ", …" } else { "" };
        format!("{}{more}", shown.join(", "))
    };
    let dup_table = table
        .duplicate_completions
        .map_or("not checked".to_string(), |d| d.to_string());
    let mut line = if ok {
        format!(
            "all {committed} committed jobs finished (done or dead_letter); ledger and table agree: lost 0, duplicate completions 0 (table: {dup_table})"
        )
    } else {
        let mut parts = vec![format!(
            "FAILED for {committed} committed jobs: lost {} (ledger) / {} (table), duplicate completions {} (ledger) / {dup_table} (table)",
            ledger.lost,
            table.lost,
            ledger.duplicate_completions.unwrap_or(0)
        )];
        if !lost.is_empty() {
            parts.push(format!("lost: {}", name(lost)));
        }
        if !dups.is_empty() {
            parts.push(format!("duplicates: {}", name(dups)));
        }
        if !agree {
            parts.push("the ledger and the table disagree".into());
        }
        parts.join("; ")
    };
    if untracked > 0 {
        line.push_str(&format!(
            "; {untracked} row(s) in the table were never seen committed"
        ));
    }
    line
}
