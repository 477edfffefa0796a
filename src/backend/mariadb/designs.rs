//! The designs on MariaDB: the seed (`seed/`), batch claims (`batch/`), delete on
//! completion (`delete/`), move to an archive (`archive/`) and a visibility timeout
//! (`visibility_timeout/`), and a user's own directory in MariaDB's dialect. The same steps
//! as PostgreSQL's, bound with `?`, arrays passed as JSON text; docs/engines.md
//! section lists each difference. The tables are in `migrations/mariadb/`.

use crate::backend::queue::{Finish, QueuePlan, VariantName};
use crate::backend::seam::DesignError;
use crate::backend::sql::custom::read_custom;
use crate::backend::sql::catalogue::{
    self, Leaving, VisibilityTimeout, proof_files, seed_statements,
};
use crate::backend::sql::design::{Returning, SqlDesign, Statements};
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
/// (sql/catalogue.rs), with MariaDB's files.
fn seed_sql() -> Statements {
    Statements {
        mark_claimed: Some(sql!("seed/mark_claimed.sql")),
        find_stale: Some(sql!("seed/find_stale.sql")),
        ..seed_statements!("../../../migrations/mariadb/0001_job_queue.sql")
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
    let state = sql!("../../../migrations/mariadb/delete/0000_job_state.sql");
    let audit = sql!("../../../migrations/mariadb/delete/0001_completion_audit.sql");
    catalogue::leaving(
        seed,
        Leaving {
            finish: Finish::Delete,
            schema: vec![sql!("../../../migrations/mariadb/0001_job_queue.sql"), state],
            audit: vec![audit],
            files: proof_files!("delete"),
            side_tables: Vec::new(),
        },
    )
}

/// Finished jobs move to `job_queue_archive` (by a procedure: no INSERT from a DELETE).
fn archive(seed: SqlDesign) -> SqlDesign {
    let archive = sql!("../../../migrations/mariadb/archive/0001_job_queue_archive.sql");
    let audit = sql!("../../../migrations/mariadb/archive/0002_completion_audit.sql");
    catalogue::leaving(
        seed,
        Leaving {
            finish: Finish::Archive,
            schema: vec![sql!("../../../migrations/mariadb/0001_job_queue.sql"), archive],
            audit: vec![audit],
            files: proof_files!("archive"),
            side_tables: vec!["job_queue_archive"],
        },
    )
}

/// pgmq's shape (sql/catalogue.rs); its claim, too, marks what it locked.
fn visibility_timeout(seed: SqlDesign) -> SqlDesign {
    let vt = VisibilityTimeout {
        schema: sql!("../../../migrations/mariadb/visibility_timeout/0001_job_queue.sql"),
        audit: vec![
            sql!("../../../migrations/mariadb/delete/0001_completion_audit.sql"),
            sql!("../../../migrations/mariadb/visibility_timeout/0002_completion_audit.sql"),
        ],
        claim: sql!("visibility_timeout/claim.sql"),
        mark_claimed: Some(sql!("visibility_timeout/mark_claimed.sql")),
        fail: sql!("visibility_timeout/fail.sql"),
        pending_count: sql!("visibility_timeout/pending_count.sql"),
        status_counts: sql!("visibility_timeout/status_counts.sql"),
    };
    catalogue::visibility_timeout(delete(seed), vt)
}
