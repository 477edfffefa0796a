//! A queue design on a SQL engine: how many jobs a claim takes, how finished jobs leave
//! (status update, delete, move to an archive; one statement per job or per batch), how an
//! idle worker waits, which table statistics and cleanup look at, and the statements that
//! do it all. Each engine builds its designs (`postgres::designs`, `mariadb::designs`) from
//! `.sql` files kept beside it, one place per design and engine; a user's own design is read
//! from a directory of its own ([`read_custom`]).

use super::super::seam::{DesignError, DesignInfo, WakeUp};
use super::params::{ClaimParam, Placeholders, rewrite};
use crate::scenario::{CUSTOM_REQUIRED_FILES, Finish, VariantPlan};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a claimed job stays invisible when a design's claim takes
/// `:visibility_timeout` and the scenario gives none (pgmq's examples use 30 s).
pub const DEFAULT_VISIBILITY_TIMEOUT: Duration = Duration::from_secs(30);

/// The statements of one design. Each is one SQL statement; the README's "Comparing queue
/// designs" lists each one's parameters and the columns it returns.
#[derive(Debug, Clone)]
pub struct Statements {
    /// DDL creating the tables and indexes, in order (run once per namespace).
    pub schema: Vec<String>,
    /// DDL added to the harness's completion audit (triggers on the design's own tables).
    pub audit: Vec<String>,
    /// The harness attaches its audit to a `status` column (`state = StatusColumn`);
    /// otherwise the design's `audit` is the whole of it.
    pub state: StateModel,
    /// `$1` type, `$2` payload (JSON text), `$3` priority, `$4` max_retries
    /// [, `$5` the wake-up channel] → `id`.
    pub enqueue: String,
    /// `$1` types[], `$2` payloads[], `$3` priorities[], `$4` max_retries → `id` per row.
    pub prefill: String,
    /// [`:batch` how many] [`:visibility_timeout`] → `id`, `type`, `payload`, one row per
    /// claimed job [, `redelivered`: an earlier claim of the job was never finished].
    pub claim: String,
    /// `$1` id, or `$1` ids[] when the design completes per batch.
    pub complete: String,
    /// `$1` id, `$2` error, `$3` backoff base, `$4` factor, `$5` cap, `$6` jitter → `status`.
    pub fail: String,
    /// `$1` stale_after → `id`, `status` per reaped job; `None` for a design without a
    /// reaper (a custom directory without reap.sql), where nothing is ever stale.
    pub reap: Option<String>,
    /// As `reap`, counting the reap as a failed attempt.
    pub reap_counting: Option<String>,
    /// The design's ticker, run every second on a connection of its own (rotation's
    /// truncation): `$1` the rotation period; `None` for designs without one.
    pub tick: Option<String>,
    /// → count of pending jobs.
    pub pending_count: String,
    /// → `status`, count.
    pub status_counts: String,
    /// `$1` ids[], `$2` expected[] → `id`, `status`, `expected` of jobs that disagree.
    pub ledger_check: String,
    /// `$1` ids[] → `id`, `status` of rows the harness never saw committed.
    pub untracked: String,
    /// `$1` ids[] → `id`, `status`, `retry_count`.
    pub job_status: String,
    /// `$1` keys[] → `id`, `key`.
    pub jobs_by_key: String,
    /// MariaDB only (no `UPDATE … RETURNING`): the UPDATE that follows the claim's locking
    /// SELECT, and the locking SELECT that `reap` / `reap_counting` follow.
    pub mark_claimed: Option<String>,
    pub find_stale: Option<String>,
}

/// How a design records where a job is, which is what the completion audit attaches to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateModel {
    /// A `status` column (`pending`, `processing`, `done`, `dead_letter`): the harness's
    /// audit records each update of it to a final status.
    StatusColumn,
    /// No status column (a visibility timeout, a read count, rows deleted or moved): the
    /// design brings its own audit, and its proof statements derive each job's status.
    OwnAudit,
}

/// How a worker claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimShape {
    /// One job per statement (the seed): the claim takes no parameter.
    Single,
    /// Up to `n` jobs per statement: the claim's `$1`.
    Batch(u32),
}

/// How many jobs one completion statement finishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompleteShape {
    /// One statement per job: `$1` is an id.
    PerJob,
    /// One statement per claimed batch: `$1` is an array of ids.
    PerBatch,
}

/// A design: its behaviour and its statements.
#[derive(Debug, Clone)]
pub struct SqlDesign {
    /// `seed`, `batch`, …, or `custom:<dir>`.
    pub label: String,
    pub claim: ClaimShape,
    pub finish: Finish,
    pub complete: CompleteShape,
    pub wake_up: WakeUp,
    /// The hot table: what the statistics, VACUUM, ANALYZE and readers look at.
    pub table: &'static str,
    /// The design's other tables that keep jobs (an archive, kept dead letters): the
    /// sampler reports their rows and size.
    pub side_tables: Vec<&'static str>,
    /// What the claim binds, in placeholder order.
    pub claim_binds: Vec<ClaimParam>,
    /// The value bound to `:visibility_timeout`.
    pub visibility_timeout: Duration,
    /// The value bound to the ticker's `$1` (rotation's period).
    pub rotation_period: Duration,
    /// Where a custom design's files are, and their SHA-256.
    pub dir: Option<PathBuf>,
    pub files_sha256: Option<String>,
    pub sql: Statements,
}

impl SqlDesign {
    /// The seed's behaviour with `sql`, named as `plan` names the variant: what the other
    /// designs change one thing of.
    pub fn seed(plan: &VariantPlan, sql: Statements) -> SqlDesign {
        SqlDesign {
            label: plan.name.as_str().to_string(),
            claim: ClaimShape::Single,
            finish: Finish::Update,
            complete: CompleteShape::PerJob,
            wake_up: WakeUp::Poll,
            table: "job_queue",
            side_tables: Vec::new(),
            claim_binds: Vec::new(),
            visibility_timeout: plan
                .visibility_timeout
                .unwrap_or(DEFAULT_VISIBILITY_TIMEOUT),
            rotation_period: plan.rotation_period,
            dir: None,
            files_sha256: None,
            sql,
        }
    }

    /// The seed's behaviour with claims of `n` jobs completed per batch.
    pub fn batched(self, n: u32) -> SqlDesign {
        SqlDesign {
            claim: ClaimShape::Batch(n),
            complete: CompleteShape::PerBatch,
            ..self
        }
    }

    /// What the harness above the seam knows of the design.
    pub fn info(&self) -> DesignInfo {
        DesignInfo {
            label: self.label.clone(),
            claim_batch: self.claim_size(),
            finish: self.finish,
            wake_up: self.wake_up,
            table: self.table.to_string(),
            claim_sql: self.sql.claim.trim().to_string(),
            files_sha256: self.files_sha256.clone(),
            ticks: self.sql.tick.is_some(),
        }
    }

    /// Replaces the claim's named parameters by `style`'s placeholders and records what to
    /// bind; a claim with `$1` / `?` of its own and batch claims binds the batch size there.
    /// A parameter the scenario sets that the claim never takes is refused, as is a name
    /// the harness does not bind.
    pub fn bind_claim(
        mut self,
        plan: &VariantPlan,
        style: Placeholders,
    ) -> Result<Self, DesignError> {
        let fail = |reason: String| DesignError {
            file: self.file("claim.sql"),
            reason,
        };
        let r = rewrite(&self.sql.claim, style).map_err(fail)?;
        let batch = matches!(self.claim, ClaimShape::Batch(_));
        let binds = match r.binds.is_empty() && r.positional && batch {
            true => vec![ClaimParam::Batch],
            false => r.binds,
        };
        if let ClaimShape::Batch(n) = self.claim
            && n > 1
            && !binds.contains(&ClaimParam::Batch)
        {
            return Err(fail(format!(
                "takes no :batch, but queue.claim_batch = {n}: use :batch where the claim limits its rows, or leave claim_batch out"
            )));
        }
        if plan.visibility_timeout.is_some() && !binds.contains(&ClaimParam::VisibilityTimeout) {
            return Err(fail(
                "takes no :visibility_timeout, but the scenario sets queue.visibility_timeout: use it in the claim, or leave the key out".into(),
            ));
        }
        self.sql.claim = r.sql;
        self.claim_binds = binds;
        Ok(self)
    }

    /// Jobs one claim takes at most.
    pub fn claim_size(&self) -> u32 {
        match self.claim {
            ClaimShape::Single => 1,
            ClaimShape::Batch(n) => n,
        }
    }

    /// How to name one of the design's statement files in a message.
    pub fn file(&self, name: &str) -> String {
        match &self.dir {
            Some(dir) => dir.join(name).display().to_string(),
            None => format!("{} variant's {name}", self.label),
        }
    }
}

/// A user's design: the seed's behaviour and defaults (`seed`), its statements from
/// `plan.dir`. A claim.sql takes `$1` (how many) and its complete.sql `$1` (ids[]) when
/// `queue.claim_batch` is above 1; otherwise both take one job, as the seed's.
pub fn read_custom(plan: &VariantPlan, seed: SqlDesign) -> Result<SqlDesign, DesignError> {
    let dir = plan.dir.as_deref().unwrap_or(Path::new("."));
    let (sql, files_sha256) = custom_statements(dir, seed.sql.clone())?;
    let design = SqlDesign {
        label: format!("custom:{}", dir.display()),
        sql,
        dir: Some(dir.to_path_buf()),
        files_sha256: Some(files_sha256),
        ..seed
    };
    Ok(match plan.claim_batch {
        n if n > 1 => design.batched(n),
        _ => design,
    })
}

/// Reads a custom design's directory: the required files must exist; the others replace
/// the seed's when present. Also the SHA-256 over every `.sql` file read, in name order.
fn custom_statements(dir: &Path, seed: Statements) -> Result<(Statements, String), DesignError> {
    let read = |name: &str| -> Result<Option<String>, DesignError> {
        let path = dir.join(name);
        let file = || path.display().to_string();
        match std::fs::read_to_string(&path) {
            Ok(text) if text.trim().is_empty() => Err(DesignError {
                file: file(),
                reason: "is empty".into(),
            }),
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(DesignError {
                file: file(),
                reason: format!("cannot be read: {e}"),
            }),
        }
    };
    let required = |name: &str| -> Result<String, DesignError> {
        read(name)?.ok_or_else(|| DesignError {
            file: dir.join(name).display().to_string(),
            reason: format!(
                "is missing; a custom variant needs {}",
                CUSTOM_REQUIRED_FILES.join(", ")
            ),
        })
    };
    // Name order, so the hash does not depend on the order of this list.
    let mut got = std::collections::BTreeMap::new();
    for name in CUSTOM_REQUIRED_FILES {
        got.insert(name, Some(required(name)?));
    }
    for name in OPTIONAL_FILES {
        got.insert(name, read(name)?);
    }
    let files_sha256 = sha256_of(&got);
    only_the_claim_is_named(dir, &got)?;
    // A design's reaper is its own: the seed's would not fit its table.
    let reap = got.remove("reap.sql").flatten();
    let reap_counting = got.remove("reap_counting.sql").flatten();
    let own_audit = got.remove("audit.sql").flatten();
    let mut take = |name: &str, default: String| got.remove(name).flatten().unwrap_or(default);
    let sql = Statements {
        schema: vec![take("schema.sql", String::new())],
        state: match own_audit {
            Some(_) => StateModel::OwnAudit,
            None => StateModel::StatusColumn,
        },
        audit: own_audit.into_iter().collect(),
        enqueue: take("enqueue.sql", String::new()),
        claim: take("claim.sql", String::new()),
        complete: take("complete.sql", String::new()),
        fail: take("fail.sql", String::new()),
        prefill: take("prefill.sql", seed.prefill),
        reap,
        reap_counting,
        tick: None,
        pending_count: take("pending_count.sql", seed.pending_count),
        status_counts: take("status_counts.sql", seed.status_counts),
        ledger_check: take("ledger_check.sql", seed.ledger_check),
        untracked: take("untracked.sql", seed.untracked),
        job_status: take("job_status.sql", seed.job_status),
        jobs_by_key: take("jobs_by_key.sql", seed.jobs_by_key),
        mark_claimed: None,
        find_stale: None,
    };
    Ok((sql, files_sha256))
}

/// Named parameters are the claim's: one in another statement would reach the server as
/// text. (DDL files are not statements the harness binds, and are not looked at.)
fn only_the_claim_is_named(
    dir: &Path,
    files: &std::collections::BTreeMap<&str, Option<String>>,
) -> Result<(), DesignError> {
    let statements = files
        .iter()
        .filter(|(name, _)| !matches!(**name, "claim.sql" | "schema.sql" | "audit.sql"));
    for (name, text) in statements {
        let Some(text) = text else { continue };
        let named = rewrite(text, Placeholders::Numbered).map(|r| r.binds);
        if !matches!(named, Ok(ref binds) if binds.is_empty()) {
            return Err(DesignError {
                file: dir.join(name).display().to_string(),
                reason: format!(
                    "takes a named parameter; only claim.sql does ({}), the other statements take the positional $n the README lists",
                    ClaimParam::allowed()
                ),
            });
        }
    }
    Ok(())
}

/// SHA-256 over each file read (its name, then its text), in name order.
fn sha256_of(files: &std::collections::BTreeMap<&str, Option<String>>) -> String {
    use sha2::Digest;
    let mut hash = sha2::Sha256::new();
    for (name, text) in files {
        if let Some(text) = text {
            hash.update(name.as_bytes());
            hash.update(text.as_bytes());
        }
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The files a custom design may bring to replace the seed's.
const OPTIONAL_FILES: [&str; 10] = [
    "audit.sql",
    "prefill.sql",
    "reap.sql",
    "reap_counting.sql",
    "pending_count.sql",
    "status_counts.sql",
    "ledger_check.sql",
    "untracked.sql",
    "job_status.sql",
    "jobs_by_key.sql",
];
