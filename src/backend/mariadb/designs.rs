//! The designs on MariaDB: the seed (`seed/`), batch claims (`batch/`), delete on
//! completion (`delete/`), move to an archive (`archive/`) and a visibility timeout
//! (`visibility_timeout/`), and a user's own directory in MariaDB's dialect. The same steps
//! as PostgreSQL's, bound with `?`, arrays passed as JSON text; docs/engines.md
//! section lists each difference. The tables are in `migrations/mariadb/`.

use crate::backend::queue::{Finish, QueuePlan, VariantName};
use crate::backend::seam::DesignError;
use crate::backend::sql::custom::read_custom;
use crate::backend::sql::design::{Returning, SqlDesign, StateModel, Statements};
use crate::named_params::{FailParam, Placeholders};

macro_rules! sql {
    ($path:literal) => {
        include_str!($path).to_string()
    };
}

/// The seed's statements, which the other designs start from. Dialect: MariaDB has no
/// `UPDATE … RETURNING`, so a claim is a locking SELECT and an UPDATE of what it locked
/// (`mark_claimed.sql`), and the reaper finds stale jobs before it updates them
/// (`find_stale.sql`); each design below changes the same statements as PostgreSQL's
/// (postgres/designs.rs), with MariaDB's files.
fn seed_sql() -> Statements {
    Statements {
        schema: vec![sql!("../../../migrations/mariadb/0001_job_queue.sql")],
        audit: Vec::new(),
        state: StateModel::StatusColumn,
        harness_ddl: Vec::new(),
        tick: None,
        enqueue: sql!("seed/enqueue.sql"),
        prefill: sql!("seed/prefill.sql"),
        claim: sql!("seed/claim.sql"),
        complete: sql!("seed/complete.sql"),
        fail: sql!("seed/fail.sql"),
        reap: Some(sql!("seed/reap.sql")),
        reap_counting: Some(sql!("seed/reap_counting.sql")),
        pending_count: sql!("seed/pending_count.sql"),
        status_counts: sql!("seed/status_counts.sql"),
        ledger_check: sql!("seed/ledger_check.sql"),
        untracked: sql!("seed/untracked.sql"),
        job_status: sql!("seed/job_status.sql"),
        jobs_by_key: sql!("seed/jobs_by_key.sql"),
        mark_claimed: Some(sql!("seed/mark_claimed.sql")),
        find_stale: Some(sql!("seed/find_stale.sql")),
    }
}

/// The design a plan names (the plan refuses the variants MariaDB does not run).
pub fn design(queue: &QueuePlan) -> Result<SqlDesign, DesignError> {
    let plan = &queue.variant;
    let seed = SqlDesign::seed(plan, seed_sql());
    let d = match plan.name {
        VariantName::Seed => seed,
        VariantName::Batch => SqlDesign {
            sql: Statements {
                claim: sql!("batch/claim.sql"),
                mark_claimed: Some(sql!("batch/mark_claimed.sql")),
                complete: sql!("batch/complete.sql"),
                ..seed.sql.clone()
            },
            ..seed
        }
        .batched(plan.claim_batch),
        VariantName::Delete => delete(seed),
        VariantName::Archive => archive(seed),
        VariantName::VisibilityTimeout => visibility_timeout(seed),
        VariantName::Custom => read_custom(queue, seed, Returning::Nothing, None)?,
        other => {
            return Err(DesignError {
                file: format!("queue.variant = {}", other.as_str()),
                reason: format!("runs on PostgreSQL only; {}", super::facts::FACTS.offers()),
            });
        }
    };
    d.bind_statements(queue, Placeholders::Question, &POSITIONAL_FAIL)
}

/// A fail.sql without names binds its `?` in this order: the id last, after the SET list.
const POSITIONAL_FAIL: [FailParam; 7] = [
    FailParam::Error,
    FailParam::BackoffBase,
    FailParam::BackoffFactor,
    FailParam::BackoffCap,
    FailParam::BackoffJitter,
    FailParam::BackoffJitter,
    FailParam::Id,
];

/// Finished jobs are deleted; the completion audit is what the proof reads them from.
fn delete(seed: SqlDesign) -> SqlDesign {
    SqlDesign {
        finish: Finish::Delete,
        sql: Statements {
            schema: vec![
                sql!("../../../migrations/mariadb/0001_job_queue.sql"),
                sql!("../../../migrations/mariadb/delete/0000_job_state.sql"),
            ],
            audit: vec![sql!(
                "../../../migrations/mariadb/delete/0001_completion_audit.sql"
            )],
            complete: sql!("delete/complete.sql"),
            ..delete_like_proof(seed.sql.clone())
        },
        ..seed
    }
}

/// The proof statements of the designs that delete finished rows, over their `job_state`.
fn delete_like_proof(sql: Statements) -> Statements {
    Statements {
        ledger_check: sql!("delete/ledger_check.sql"),
        untracked: sql!("delete/untracked.sql"),
        job_status: sql!("delete/job_status.sql"),
        jobs_by_key: sql!("delete/jobs_by_key.sql"),
        ..sql
    }
}

/// Finished jobs move to `job_queue_archive` (by a procedure: no INSERT from a DELETE).
fn archive(seed: SqlDesign) -> SqlDesign {
    SqlDesign {
        finish: Finish::Archive,
        sql: Statements {
            schema: vec![
                sql!("../../../migrations/mariadb/0001_job_queue.sql"),
                sql!("../../../migrations/mariadb/archive/0001_job_queue_archive.sql"),
            ],
            audit: vec![sql!(
                "../../../migrations/mariadb/archive/0002_completion_audit.sql"
            )],
            complete: sql!("archive/complete.sql"),
            ledger_check: sql!("archive/ledger_check.sql"),
            untracked: sql!("archive/untracked.sql"),
            job_status: sql!("archive/job_status.sql"),
            jobs_by_key: sql!("archive/jobs_by_key.sql"),
            ..seed.sql.clone()
        },
        side_tables: vec!["job_queue_archive"],
        ..seed
    }
}

/// pgmq's shape: a visibility timeout and read count, no status column, deleted on
/// completion; a crashed worker's job comes back when its timeout runs out (no reaper).
fn visibility_timeout(seed: SqlDesign) -> SqlDesign {
    SqlDesign {
        finish: Finish::Delete,
        sql: Statements {
            schema: vec![sql!(
                "../../../migrations/mariadb/visibility_timeout/0001_job_queue.sql"
            )],
            state: StateModel::OwnAudit,
            audit: vec![
                sql!("../../../migrations/mariadb/delete/0001_completion_audit.sql"),
                sql!("../../../migrations/mariadb/visibility_timeout/0002_completion_audit.sql"),
            ],
            claim: sql!("visibility_timeout/claim.sql"),
            mark_claimed: Some(sql!("visibility_timeout/mark_claimed.sql")),
            complete: sql!("delete/complete.sql"),
            fail: sql!("visibility_timeout/fail.sql"),
            reap: None,
            reap_counting: None,
            find_stale: None,
            pending_count: sql!("visibility_timeout/pending_count.sql"),
            status_counts: sql!("visibility_timeout/status_counts.sql"),
            ..delete_like_proof(seed.sql.clone())
        },
        ..seed
    }
}
