//! The designs on PostgreSQL: the seed (`seed/`, the article's statements verbatim), the
//! built-in variants (`variants/<name>/`, each changing one thing of the seed), and a user's
//! own directory. The tables are in `migrations/`.

use crate::backend::queue::{Finish, QueuePlan, VariantName, VariantPlan};
use crate::backend::seam::{DesignError, WakeUp};
use crate::backend::sql::declared::DeclaredSql;
use crate::backend::sql::custom::read_custom;
use crate::backend::sql::catalogue::{
    self, Leaving, VisibilityTimeout, proof_files, seed_statements,
};
use crate::backend::sql::design::{Returning, SqlDesign, Statements};
use crate::named_params::{FailParam, Named, Placeholders};

macro_rules! sql {
    ($path:literal) => {
        include_str!($path).to_string()
    };
}

/// The statements of a custom design that declares its states (design.toml).
const DECLARED: DeclaredSql = DeclaredSql {
    view: include_str!("declared/view.sql"),
    trigger: include_str!("declared/trigger.sql"),
    pending_count: include_str!("declared/pending_count.sql"),
    status_counts: include_str!("declared/status_counts.sql"),
    job_status: include_str!("declared/job_status.sql"),
    ledger_check: include_str!("declared/ledger_check.sql"),
    untracked: include_str!("declared/untracked.sql"),
    jobs_by_key: include_str!("declared/jobs_by_key.sql"),
    no_count: "NULL",
};

/// The seed's statements, which the other designs start from.
fn seed_sql() -> Statements {
    seed_statements!("../../../migrations/seed/0001_job_queue.sql")
}

/// The design a plan names, with its storage options applied.
pub fn design(queue: &QueuePlan) -> Result<SqlDesign, DesignError> {
    let plan = &queue.variant;
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
        VariantName::VisibilityTimeout => visibility_timeout(seed),
        VariantName::Rotation => rotation(seed),
        VariantName::Custom => read_custom(queue, seed, Returning::Rows, Some(&DECLARED))?,
    };
    Ok(with_storage(
        // A fail.sql without names binds `$1`…`$6` in the names' order (docs/designs.md lists it).
        d.bind_statements(queue, Placeholders::Numbered, FailParam::ALL)?,
        plan,
    ))
}

/// Finished jobs are deleted; the completion audit is what the proof reads them from.
fn delete(seed: SqlDesign) -> SqlDesign {
    let schema = sql!("../../../migrations/delete/0000_job_state.sql");
    catalogue::leaving(
        seed,
        Leaving {
            finish: Finish::Delete,
            schema: vec![sql!("../../../migrations/seed/0001_job_queue.sql"), schema],
            audit: vec![sql!("../../../migrations/delete/0001_completion_audit.sql")],
            files: proof_files!("variants/delete"),
            side_tables: Vec::new(),
        },
    )
}

/// Que's design: the claim locks a job with an advisory lock instead of writing its row;
/// a finished job is deleted (so the proof reads the completion audit, as for `delete`).
fn advisory_lock(seed: SqlDesign) -> SqlDesign {
    let d = delete(seed);
    SqlDesign {
        sql: Statements {
            schema: vec![
                sql!("../../../migrations/seed/0001_job_queue.sql"),
                sql!("../../../migrations/delete/0000_job_state.sql"),
                sql!("../../../migrations/advisory_lock/0001_claim_function.sql"),
            ],
            claim: sql!("variants/advisory_lock/claim.sql"),
            ..d.sql.clone()
        },
        ..d
    }
}

/// pgmq's design (sql/catalogue.rs), its state derived by the `job_state` view the proof
/// reads; the claim reports a redelivery.
fn visibility_timeout(seed: SqlDesign) -> SqlDesign {
    let vt = VisibilityTimeout {
        schema: sql!("../../../migrations/visibility_timeout/0001_job_queue.sql"),
        audit: vec![
            sql!("../../../migrations/delete/0001_completion_audit.sql"),
            sql!("../../../migrations/visibility_timeout/0002_completion_audit.sql"),
        ],
        claim: sql!("variants/visibility_timeout/claim.sql"),
        mark_claimed: None,
        fail: sql!("variants/visibility_timeout/fail.sql"),
        pending_count: sql!("variants/visibility_timeout/pending_count.sql"),
        status_counts: sql!("stats/state_counts.sql"),
    };
    catalogue::visibility_timeout(delete(seed), vt)
}

/// PgQ's design: jobs go to one of three partitions in turn, and a partition whose jobs
/// have all finished is truncated (by the ticker, `tick.sql`), so finished rows never wait
/// for vacuum. Claims and updates are the seed's; the proof reads the audit, the partitions
/// and the dead letters kept from truncated partitions.
fn rotation(seed: SqlDesign) -> SqlDesign {
    let complete = seed.sql.complete.clone();
    let d = delete(seed);
    SqlDesign {
        finish: Finish::Truncate,
        sql: Statements {
            schema: vec![sql!("../../../migrations/rotation/0001_job_queue.sql")],
            audit: vec![sql!(
                "../../../migrations/rotation/0002_completion_audit.sql"
            )],
            enqueue: sql!("variants/rotation/enqueue.sql"),
            prefill: sql!("variants/rotation/prefill.sql"),
            complete,
            status_counts: sql!("stats/state_counts.sql"),
            tick: Some(sql!("variants/rotation/tick.sql")),
            ..d.sql.clone()
        },
        side_tables: vec!["job_dead_letter"],
        ..d
    }
}

/// Finished jobs move to an archive table.
fn archive(seed: SqlDesign) -> SqlDesign {
    let schema = sql!("../../../migrations/archive/0001_job_queue_archive.sql");
    catalogue::leaving(
        seed,
        Leaving {
            finish: Finish::Archive,
            schema: vec![sql!("../../../migrations/seed/0001_job_queue.sql"), schema],
            audit: vec![sql!("../../../migrations/archive/0002_completion_audit.sql")],
            files: proof_files!("variants/archive"),
            side_tables: vec!["job_queue_archive"],
        },
    )
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
