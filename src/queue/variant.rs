//! Queue designs (variants): what a worker does differently, and the SQL that does it.
//!
//! A [`Variant`] is behaviour first: how many jobs a claim takes, how finished jobs leave
//! (status update, delete, move to an archive; one statement per job or per batch), how an
//! idle worker waits (poll, or LISTEN/NOTIFY with the poll as a fallback), and which table
//! the database statistics, VACUUM and probes look at. Its statements live in `.sql` files,
//! one place per variant (the seed's in `seed/`, the others' in `variants/<name>/`, a user's
//! in a directory of their own), and take every value as a bound parameter. A variant belongs
//! to an engine: the MariaDB seed and batch variants have statements of their own in
//! `mariadb/` (see [`Variant::mariadb`]).

use crate::scenario::{Engine, VariantName, VariantPlan};
use std::path::Path;
use std::sync::Arc;

/// The statements of one queue design. Each is one SQL statement; the README's "Comparing
/// queue designs" lists each one's parameters and the columns it returns.
#[derive(Debug, Clone)]
pub struct VariantSql {
    /// DDL creating the tables and indexes, in order (run once per run schema).
    pub schema: Vec<String>,
    /// DDL added to the harness's completion audit (triggers on the variant's own tables).
    pub audit: Vec<String>,
    /// `$1` type, `$2` payload (JSON text), `$3` priority, `$4` max_retries
    /// [, `$5` the wake-up channel] → `id`.
    pub enqueue: String,
    /// `$1` types[], `$2` payloads[], `$3` priorities[], `$4` max_retries → `id` per row.
    pub prefill: String,
    /// [`$1` how many] → `id`, `type`, `payload`, one row per claimed job.
    pub claim: String,
    /// `$1` id, or `$1` ids[] when the variant completes per batch.
    pub complete: String,
    /// `$1` id, `$2` error, `$3` backoff base, `$4` factor, `$5` cap, `$6` jitter → `status`.
    pub fail: String,
    /// `$1` stale_after → `id`, `status` per reaped job.
    pub reap: String,
    /// As `reap`, counting the reap as a failed attempt.
    pub reap_counting: String,
    /// → count of pending jobs.
    pub pending_count: String,
    /// → `status`, count.
    pub status_counts: String,
    /// `$1` ids[], `$2` expected[] → `id`, `status`, `expected` of jobs that disagree.
    pub ledger_check: String,
    /// `$1` ids[] → `id`, `status` of rows the harness never saw committed.
    pub untracked: String,
    /// `$1` ids[] → `id`, `status`.
    pub job_status: String,
    /// `$1` keys[] → `id`, `key`.
    pub jobs_by_key: String,
    /// MariaDB only (no `UPDATE … RETURNING`): the UPDATE that follows the claim's locking
    /// SELECT, and the locking SELECT that `reap` / `reap_counting` follow.
    pub mark_claimed: Option<String>,
    pub find_stale: Option<String>,
}

/// How a worker claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimShape {
    /// One job per statement (the seed): the claim takes no parameter.
    Single,
    /// Up to `n` jobs per statement: the claim's `$1`.
    Batch(u32),
}

/// How finished jobs leave the hot table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// `status = 'done'`; the row stays (the seed).
    Update,
    /// The row is deleted.
    Delete,
    /// The row moves to an archive table.
    Archive,
}

/// How many jobs one completion statement finishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompleteShape {
    /// One statement per job: `$1` is an id.
    PerJob,
    /// One statement per claimed batch: `$1` is an array of ids.
    PerBatch,
}

/// How an idle worker waits after an empty claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakeUp {
    /// Sleep `consumers.poll_interval` (the seed).
    Poll,
    /// Wait for a notification from an enqueue, or `poll_interval`, whichever comes first.
    Notify,
}

/// A queue design: its behaviour and its SQL.
#[derive(Debug)]
pub struct Variant {
    /// `seed`, `batch`, …, or `custom:<dir>`.
    pub name: String,
    pub claim: ClaimShape,
    pub finish: Finish,
    pub complete: CompleteShape,
    pub wake_up: WakeUp,
    /// The hot table: what the statistics, VACUUM, ANALYZE and readers look at.
    pub table: &'static str,
    /// Whether the proof needs the completion audit (finished rows leave the table).
    pub needs_audit: bool,
    /// Where a `custom` variant's files are.
    pub dir: Option<std::path::PathBuf>,
    pub sql: VariantSql,
}

macro_rules! sql {
    ($path:literal) => {
        include_str!($path).to_string()
    };
}

/// The seed's statements, which the other built-in variants start from.
fn seed_sql() -> VariantSql {
    VariantSql {
        schema: vec![sql!("../../migrations/seed/0001_job_queue.sql")],
        audit: Vec::new(),
        enqueue: sql!("seed/enqueue.sql"),
        prefill: sql!("seed/prefill.sql"),
        claim: sql!("seed/claim.sql"),
        complete: sql!("seed/complete.sql"),
        fail: sql!("seed/fail.sql"),
        reap: sql!("seed/reap.sql"),
        reap_counting: sql!("seed/reap_counting.sql"),
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

/// The seed's statements on MariaDB (`mariadb/seed/`): the same steps, bound with `?`, arrays
/// passed as JSON text; the README's "MariaDB" section lists each difference.
fn mariadb_seed_sql() -> VariantSql {
    VariantSql {
        schema: vec![sql!("../../migrations/mariadb/0001_job_queue.sql")],
        audit: Vec::new(),
        enqueue: sql!("mariadb/seed/enqueue.sql"),
        prefill: sql!("mariadb/seed/prefill.sql"),
        claim: sql!("mariadb/seed/claim.sql"),
        complete: sql!("mariadb/seed/complete.sql"),
        fail: sql!("mariadb/seed/fail.sql"),
        reap: sql!("mariadb/seed/reap.sql"),
        reap_counting: sql!("mariadb/seed/reap_counting.sql"),
        pending_count: sql!("mariadb/seed/pending_count.sql"),
        status_counts: sql!("mariadb/seed/status_counts.sql"),
        ledger_check: sql!("mariadb/seed/ledger_check.sql"),
        untracked: sql!("mariadb/seed/untracked.sql"),
        job_status: sql!("mariadb/seed/job_status.sql"),
        jobs_by_key: sql!("mariadb/seed/jobs_by_key.sql"),
        mark_claimed: Some(sql!("mariadb/seed/mark_claimed.sql")),
        find_stale: Some(sql!("mariadb/seed/find_stale.sql")),
    }
}

impl Variant {
    /// The seed's behaviour with `sql`, named as `plan` names the variant: what the other
    /// variants change one thing of.
    fn seed(plan: &VariantPlan, sql: VariantSql) -> Variant {
        Variant {
            name: plan.name.as_str().to_string(),
            claim: ClaimShape::Single,
            finish: Finish::Update,
            complete: CompleteShape::PerJob,
            wake_up: WakeUp::Poll,
            table: "job_queue",
            needs_audit: false,
            dir: None,
            sql,
        }
    }

    /// The variant a plan names on `engine`.
    pub fn for_engine(plan: &VariantPlan, engine: Engine) -> Result<Variant, CustomError> {
        match engine {
            Engine::Postgres => Variant::from_plan(plan),
            Engine::Mariadb => Variant::mariadb(plan),
        }
    }

    /// The MariaDB variants: the seed and the batch claim (the plan refuses the others).
    fn mariadb(plan: &VariantPlan) -> Result<Variant, CustomError> {
        let seed = Variant::seed(plan, mariadb_seed_sql());
        match plan.name {
            VariantName::Seed => Ok(seed),
            VariantName::Batch => Ok(Variant {
                claim: ClaimShape::Batch(plan.claim_batch),
                complete: CompleteShape::PerBatch,
                sql: VariantSql {
                    claim: sql!("mariadb/batch/claim.sql"),
                    mark_claimed: Some(sql!("mariadb/batch/mark_claimed.sql")),
                    complete: sql!("mariadb/batch/complete.sql"),
                    ..seed.sql
                },
                ..seed
            }),
            other => Err(CustomError {
                file: format!("queue.variant = {}", other.as_str()),
                reason: "runs on PostgreSQL only; on MariaDB use seed or batch".into(),
            }),
        }
    }

    /// The variant a plan names (PostgreSQL), with its storage options applied.
    pub fn from_plan(plan: &VariantPlan) -> Result<Variant, CustomError> {
        let seed = Variant::seed(plan, seed_sql());
        let v = match plan.name {
            VariantName::Seed => seed,
            VariantName::Batch => Variant {
                claim: ClaimShape::Batch(plan.claim_batch),
                complete: CompleteShape::PerBatch,
                sql: VariantSql {
                    claim: sql!("variants/batch/claim.sql"),
                    complete: sql!("variants/batch/complete.sql"),
                    ..seed.sql
                },
                ..seed
            },
            VariantName::Notify => Variant {
                wake_up: WakeUp::Notify,
                sql: VariantSql {
                    enqueue: sql!("variants/notify/enqueue.sql"),
                    ..seed.sql
                },
                ..seed
            },
            VariantName::Delete => Variant {
                finish: Finish::Delete,
                needs_audit: true,
                sql: VariantSql {
                    audit: vec![sql!("../../migrations/delete/0001_completion_audit.sql")],
                    complete: sql!("variants/delete/complete.sql"),
                    ledger_check: sql!("variants/delete/ledger_check.sql"),
                    untracked: sql!("variants/delete/untracked.sql"),
                    job_status: sql!("variants/delete/job_status.sql"),
                    jobs_by_key: sql!("variants/delete/jobs_by_key.sql"),
                    ..seed.sql
                },
                ..seed
            },
            VariantName::Archive => Variant {
                finish: Finish::Archive,
                needs_audit: false,
                sql: VariantSql {
                    schema: vec![
                        sql!("../../migrations/seed/0001_job_queue.sql"),
                        sql!("../../migrations/archive/0001_job_queue_archive.sql"),
                    ],
                    audit: vec![sql!("../../migrations/archive/0002_completion_audit.sql")],
                    complete: sql!("variants/archive/complete.sql"),
                    ledger_check: sql!("variants/archive/ledger_check.sql"),
                    untracked: sql!("variants/archive/untracked.sql"),
                    job_status: sql!("variants/archive/job_status.sql"),
                    jobs_by_key: sql!("variants/archive/jobs_by_key.sql"),
                    ..seed.sql
                },
                ..seed
            },
            VariantName::PlainIndex => Variant {
                sql: VariantSql {
                    schema: vec![
                        sql!("../../migrations/seed/0001_job_queue.sql"),
                        sql!("../../migrations/plain_index/0002_plain_index.sql"),
                    ],
                    ..seed.sql
                },
                ..seed
            },
            VariantName::Custom => custom(plan, seed)?,
        };
        Ok(v.with_storage(plan))
    }

    /// The storage options of `plan`, as DDL run after the schema.
    fn with_storage(mut self, plan: &VariantPlan) -> Variant {
        // Storage options: validated integers and a fixed table name, spliced into DDL (DDL
        // takes no bound parameters).
        if let Some(ff) = plan.fillfactor {
            self.sql.schema.push(format!(
                "ALTER TABLE {} SET (fillfactor = {ff})",
                self.table
            ));
        }
        if plan.unlogged {
            self.sql
                .schema
                .push(format!("ALTER TABLE {} SET UNLOGGED", self.table));
        }
        self
    }

    pub fn shared(self) -> Arc<Variant> {
        Arc::new(self)
    }

    /// How to name one of the variant's statement files in a message.
    pub fn file(&self, name: &str) -> String {
        match &self.dir {
            Some(dir) => dir.join(name).display().to_string(),
            None => format!("{} variant's {name}", self.name),
        }
    }
}

/// A user's variant: the seed's behaviour and defaults, its statements from `plan.dir`.
fn custom(plan: &VariantPlan, seed: Variant) -> Result<Variant, CustomError> {
    // A custom claim.sql takes `$1` (how many) and its complete.sql `$1` (ids[])
    // when queue.claim_batch is above 1; otherwise both take one job, as the seed's.
    let dir = plan.dir.as_deref().unwrap_or(Path::new("."));
    let batch = plan.claim_batch > 1;
    Ok(Variant {
        name: format!("custom:{}", dir.display()),
        claim: if batch {
            ClaimShape::Batch(plan.claim_batch)
        } else {
            ClaimShape::Single
        },
        complete: if batch {
            CompleteShape::PerBatch
        } else {
            CompleteShape::PerJob
        },
        sql: custom_sql(dir, seed.sql)?,
        dir: Some(dir.to_path_buf()),
        ..seed
    })
}

/// A custom variant's directory is unusable: which file, and why.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{file}: {reason}")]
pub struct CustomError {
    pub file: String,
    pub reason: String,
}

/// The files a custom variant must have (the others default to the seed's).
const CUSTOM_REQUIRED: [&str; 5] = [
    "schema.sql",
    "enqueue.sql",
    "claim.sql",
    "complete.sql",
    "fail.sql",
];

/// Reads a custom variant's directory: the required files must exist; the others replace
/// the seed's when present.
fn custom_sql(dir: &Path, seed: VariantSql) -> Result<VariantSql, CustomError> {
    let read = |name: &str| -> Result<Option<String>, CustomError> {
        let path = dir.join(name);
        match std::fs::read_to_string(&path) {
            Ok(text) if text.trim().is_empty() => Err(CustomError {
                file: path.display().to_string(),
                reason: "is empty".into(),
            }),
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(CustomError {
                file: path.display().to_string(),
                reason: format!("cannot be read: {e}"),
            }),
        }
    };
    let required = |name: &str| -> Result<String, CustomError> {
        read(name)?.ok_or_else(|| CustomError {
            file: dir.join(name).display().to_string(),
            reason: format!(
                "is missing; a custom variant needs {}",
                CUSTOM_REQUIRED.join(", ")
            ),
        })
    };
    let or = |name: &str, default: String| -> Result<String, CustomError> {
        Ok(read(name)?.unwrap_or(default))
    };
    Ok(VariantSql {
        schema: vec![required("schema.sql")?],
        audit: Vec::new(),
        enqueue: required("enqueue.sql")?,
        claim: required("claim.sql")?,
        complete: required("complete.sql")?,
        fail: required("fail.sql")?,
        prefill: or("prefill.sql", seed.prefill)?,
        reap: or("reap.sql", seed.reap)?,
        reap_counting: or("reap_counting.sql", seed.reap_counting)?,
        pending_count: or("pending_count.sql", seed.pending_count)?,
        status_counts: or("status_counts.sql", seed.status_counts)?,
        ledger_check: or("ledger_check.sql", seed.ledger_check)?,
        untracked: or("untracked.sql", seed.untracked)?,
        job_status: or("job_status.sql", seed.job_status)?,
        jobs_by_key: or("jobs_by_key.sql", seed.jobs_by_key)?,
        mark_claimed: None,
        find_stale: None,
    })
}
