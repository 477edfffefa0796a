//! The built-in designs both SQL engines run, described once: which of the seed's
//! statements each design replaces and with which of its directory's files. An engine's
//! `designs.rs` names its directories (`delete/`, `variants/delete/`) and the designs only
//! it runs; the files are read from the engine's folder at build time ([`seed_statements`],
//! [`proof_files`]: `include_str!` resolves paths from the file that names them).

use super::design::{SqlDesign, Statements};
use crate::backend::queue::Finish;

/// The seed's statements: the files of the engine's `seed/` directory by their
/// conventional names, and the queue table's DDL (`$schema`, a path from the engine's
/// folder).
#[macro_export]
macro_rules! seed_statements {
    ($schema:literal) => {
        $crate::backend::sql::design::Statements {
            schema: vec![include_str!($schema).to_string()],
            audit: Vec::new(),
            state: $crate::backend::sql::design::StateModel::StatusColumn,
            harness_ddl: Vec::new(),
            tick: None,
            enqueue: include_str!("seed/enqueue.sql").to_string(),
            prefill: include_str!("seed/prefill.sql").to_string(),
            claim: include_str!("seed/claim.sql").to_string(),
            complete: include_str!("seed/complete.sql").to_string(),
            fail: include_str!("seed/fail.sql").to_string(),
            reap: Some(include_str!("seed/reap.sql").to_string()),
            reap_counting: Some(include_str!("seed/reap_counting.sql").to_string()),
            pending_count: include_str!("seed/pending_count.sql").to_string(),
            status_counts: include_str!("seed/status_counts.sql").to_string(),
            ledger_check: include_str!("seed/ledger_check.sql").to_string(),
            untracked: include_str!("seed/untracked.sql").to_string(),
            job_status: include_str!("seed/job_status.sql").to_string(),
            jobs_by_key: include_str!("seed/jobs_by_key.sql").to_string(),
            mark_claimed: None,
            find_stale: None,
        }
    };
}

/// The proof's statements and the completion of a design whose finished jobs leave the
/// queue table: the files of directory `$dir` (a path from the engine's folder).
#[macro_export]
macro_rules! proof_files {
    ($dir:literal) => {
        $crate::backend::sql::catalogue::ProofFiles {
            complete: include_str!(concat!($dir, "/complete.sql")).to_string(),
            ledger_check: include_str!(concat!($dir, "/ledger_check.sql")).to_string(),
            untracked: include_str!(concat!($dir, "/untracked.sql")).to_string(),
            job_status: include_str!(concat!($dir, "/job_status.sql")).to_string(),
            jobs_by_key: include_str!(concat!($dir, "/jobs_by_key.sql")).to_string(),
        }
    };
}

pub use crate::{proof_files, seed_statements};

/// What a design whose finished jobs leave the table completes with, and how the proof
/// reads where they went (a state table, an archive).
pub struct ProofFiles {
    pub complete: String,
    pub ledger_check: String,
    pub untracked: String,
    pub job_status: String,
    pub jobs_by_key: String,
}

/// Where a design's finished jobs go, and the tables that hold them.
pub struct Leaving {
    pub finish: Finish,
    /// The DDL: the queue table and the design's own tables.
    pub schema: Vec<String>,
    /// The completion audit's triggers on the design's tables.
    pub audit: Vec<String>,
    pub files: ProofFiles,
    /// The design's other tables that keep jobs (sampled for their size).
    pub side_tables: Vec<&'static str>,
}

/// The seed, its finished jobs deleted (`delete`, with the state table the proof reads) or
/// moved to an archive (`archive`).
pub fn leaving(seed: SqlDesign, l: Leaving) -> SqlDesign {
    let f = l.files;
    SqlDesign {
        finish: l.finish,
        sql: Statements {
            schema: l.schema,
            audit: l.audit,
            complete: f.complete,
            ledger_check: f.ledger_check,
            untracked: f.untracked,
            job_status: f.job_status,
            jobs_by_key: f.jobs_by_key,
            ..seed.sql.clone()
        },
        side_tables: l.side_tables,
        ..seed
    }
}

/// pgmq's shape on the `delete` design: a visibility timeout and a read count instead of a
/// status column; a claim hides the job for the timeout (and counts the read), a failure for
/// its back-off, and a crashed worker's job comes back when its timeout runs out (no
/// reaper). Its state is derived for the proof, and its audit is its own.
pub struct VisibilityTimeout {
    pub schema: String,
    pub audit: Vec<String>,
    pub claim: String,
    /// The claim's second step, on an engine whose claim is a locking SELECT.
    pub mark_claimed: Option<String>,
    pub fail: String,
    pub pending_count: String,
    pub status_counts: String,
}

/// The `delete` design `d` with a visibility timeout.
pub fn visibility_timeout(d: SqlDesign, v: VisibilityTimeout) -> SqlDesign {
    SqlDesign {
        sql: Statements {
            schema: vec![v.schema],
            state: super::design::StateModel::OwnAudit,
            audit: v.audit,
            claim: v.claim,
            mark_claimed: v.mark_claimed,
            fail: v.fail,
            reap: None,
            reap_counting: None,
            find_stale: None,
            pending_count: v.pending_count,
            status_counts: v.status_counts,
            ..d.sql.clone()
        },
        ..d
    }
}
