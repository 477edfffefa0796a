//! The designs on PostgreSQL: the seed (`seed/`, the article's statements verbatim), the
//! built-in variants (`variants/<name>/`, each changing one thing of the seed), and a user's
//! own directory. The tables are in `migrations/`.

use crate::backend::seam::{DesignError, WakeUp};
use crate::backend::sql::design::{SqlDesign, Statements, read_custom};
use crate::scenario::{Finish, VariantName, VariantPlan};

macro_rules! sql {
    ($path:literal) => {
        include_str!($path).to_string()
    };
}

/// The seed's statements, which the other designs start from.
fn seed_sql() -> Statements {
    Statements {
        schema: vec![sql!("../../../migrations/seed/0001_job_queue.sql")],
        audit: Vec::new(),
        enqueue: sql!("seed/enqueue.sql"),
        prefill: sql!("seed/prefill.sql"),
        claim: sql!("seed/claim.sql"),
        complete: sql!("seed/complete.sql"),
        fail: sql!("seed/fail.sql"),
        reap: Some(sql!("seed/reap.sql")),
        reap_counting: Some(sql!("seed/reap_counting.sql")),
        pending_count: sql!("seed/pending_count.sql"),
        status_counts: sql!("stats/status_counts.sql"),
        ledger_check: sql!("seed/ledger_check.sql"),
        untracked: sql!("seed/untracked.sql"),
        job_status: sql!("seed/job_status.sql"),
        jobs_by_key: sql!("jobs_by_key.sql"),
        mark_claimed: None,
        find_stale: None,
    }
}

/// The design a plan names, with its storage options applied.
pub fn design(plan: &VariantPlan) -> Result<SqlDesign, DesignError> {
    let seed = SqlDesign::seed(plan, seed_sql());
    let d = match plan.name {
        VariantName::Seed => seed,
        VariantName::Batch => SqlDesign {
            sql: Statements {
                claim: sql!("variants/batch/claim.sql"),
                complete: sql!("variants/batch/complete.sql"),
                ..seed.sql.clone()
            },
            ..seed
        }
        .batched(plan.claim_batch),
        VariantName::Notify => SqlDesign {
            wake_up: WakeUp::Notify,
            sql: Statements {
                enqueue: sql!("variants/notify/enqueue.sql"),
                ..seed.sql.clone()
            },
            ..seed
        },
        VariantName::Delete => delete(seed),
        VariantName::Archive => archive(seed),
        VariantName::PlainIndex => SqlDesign {
            sql: Statements {
                schema: vec![
                    sql!("../../../migrations/seed/0001_job_queue.sql"),
                    sql!("../../../migrations/plain_index/0002_plain_index.sql"),
                ],
                ..seed.sql.clone()
            },
            ..seed
        },
        VariantName::AdvisoryLock => advisory_lock(seed),
        VariantName::Custom => read_custom(plan, seed)?,
    };
    Ok(with_storage(d, plan))
}

/// Finished jobs are deleted; the completion audit is what the proof reads them from.
fn delete(seed: SqlDesign) -> SqlDesign {
    SqlDesign {
        finish: Finish::Delete,
        sql: Statements {
            audit: vec![sql!("../../../migrations/delete/0001_completion_audit.sql")],
            complete: sql!("variants/delete/complete.sql"),
            ledger_check: sql!("variants/delete/ledger_check.sql"),
            untracked: sql!("variants/delete/untracked.sql"),
            job_status: sql!("variants/delete/job_status.sql"),
            jobs_by_key: sql!("variants/delete/jobs_by_key.sql"),
            ..seed.sql.clone()
        },
        ..seed
    }
}

/// Que's design: the claim locks a job with an advisory lock instead of writing its row;
/// a finished job is deleted (so the proof reads the completion audit, as for `delete`).
fn advisory_lock(seed: SqlDesign) -> SqlDesign {
    let d = delete(seed);
    SqlDesign {
        sql: Statements {
            schema: vec![
                sql!("../../../migrations/seed/0001_job_queue.sql"),
                sql!("../../../migrations/advisory_lock/0001_claim_function.sql"),
            ],
            claim: sql!("variants/advisory_lock/claim.sql"),
            ..d.sql.clone()
        },
        ..d
    }
}

/// Finished jobs move to an archive table.
fn archive(seed: SqlDesign) -> SqlDesign {
    SqlDesign {
        finish: Finish::Archive,
        sql: Statements {
            schema: vec![
                sql!("../../../migrations/seed/0001_job_queue.sql"),
                sql!("../../../migrations/archive/0001_job_queue_archive.sql"),
            ],
            audit: vec![sql!(
                "../../../migrations/archive/0002_completion_audit.sql"
            )],
            complete: sql!("variants/archive/complete.sql"),
            ledger_check: sql!("variants/archive/ledger_check.sql"),
            untracked: sql!("variants/archive/untracked.sql"),
            job_status: sql!("variants/archive/job_status.sql"),
            jobs_by_key: sql!("variants/archive/jobs_by_key.sql"),
            ..seed.sql.clone()
        },
        ..seed
    }
}

/// The storage options of `plan`, as DDL run after the schema: validated integers and a
/// fixed table name, spliced in (DDL takes no bound parameters).
fn with_storage(mut d: SqlDesign, plan: &VariantPlan) -> SqlDesign {
    if let Some(ff) = plan.fillfactor {
        d.sql
            .schema
            .push(format!("ALTER TABLE {} SET (fillfactor = {ff})", d.table));
    }
    if plan.unlogged {
        d.sql
            .schema
            .push(format!("ALTER TABLE {} SET UNLOGGED", d.table));
    }
    d
}
