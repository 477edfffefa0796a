//! The designs on MariaDB: the seed (`seed/`), batch claims (`batch/`) and delete on
//! completion (`delete/`). The same steps
//! as PostgreSQL's, bound with `?`, arrays passed as JSON text; the README's "MariaDB"
//! section lists each difference. The tables are in `migrations/mariadb/`.

use crate::backend::seam::DesignError;
use crate::backend::sql::design::{SqlDesign, StateModel, Statements};
use crate::backend::sql::params::Placeholders;
use crate::scenario::{Finish, VariantName, VariantPlan};

macro_rules! sql {
    ($path:literal) => {
        include_str!($path).to_string()
    };
}

fn seed_sql() -> Statements {
    Statements {
        schema: vec![sql!("../../../migrations/mariadb/0001_job_queue.sql")],
        audit: Vec::new(),
        state: StateModel::StatusColumn,
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
pub fn design(plan: &VariantPlan) -> Result<SqlDesign, DesignError> {
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
        VariantName::Delete => SqlDesign {
            finish: Finish::Delete,
            sql: Statements {
                audit: vec![sql!(
                    "../../../migrations/mariadb/delete/0001_completion_audit.sql"
                )],
                complete: sql!("delete/complete.sql"),
                ledger_check: sql!("delete/ledger_check.sql"),
                untracked: sql!("delete/untracked.sql"),
                job_status: sql!("delete/job_status.sql"),
                jobs_by_key: sql!("delete/jobs_by_key.sql"),
                ..seed.sql.clone()
            },
            ..seed
        },
        other => {
            return Err(DesignError {
                file: format!("queue.variant = {}", other.as_str()),
                reason: format!(
                    "runs on PostgreSQL only; {}",
                    crate::engine::Engine::Mariadb.offers()
                ),
            });
        }
    };
    d.bind_claim(plan, Placeholders::Question)
}
