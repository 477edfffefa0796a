//! A queue design on a SQL engine: how many jobs a claim takes, how finished jobs leave
//! (status update, delete, move to an archive; one statement per job or per batch), how an
//! idle worker waits, which table statistics and cleanup look at, and the statements that
//! do it all. Each engine builds its designs (`postgres::designs`, `mariadb::designs`) from
//! `.sql` files kept beside it, one place per design and engine; a user's own design is read
//! from a directory of its own (`sql::custom`).

use super::super::error::{BackendError, ErrorClass};
use super::super::job::JobStatus;
use super::super::seam::{DesignError, DesignInfo, WakeUp};
use super::declared::StateWords;
use crate::backend::queue::{BackoffPlan, Finish, Jitter, QueuePlan, VariantPlan};
use crate::named_params::{ClaimParam, FailParam, MarkParam, Named, Placeholders, rewrite};
use std::path::PathBuf;
use std::time::Duration;

/// How long a claimed job stays invisible when a design's claim takes
/// `:visibility_timeout` and the scenario gives none (pgmq's examples use 30 s).
pub const DEFAULT_VISIBILITY_TIMEOUT: Duration = Duration::from_secs(30);

/// How often a design's ticker runs unless its design.toml says (`tick_interval`).
pub const DEFAULT_TICK: Duration = Duration::from_secs(1);

/// The statements of one design. Each is one SQL statement; docs/designs.md's "Comparing queue
/// designs" lists each one's parameters and the columns it returns.
#[derive(Debug, Clone)]
pub struct Statements {
    /// DDL creating the tables and indexes, in order (run once per namespace).
    pub schema: Vec<String>,
    /// DDL added to the harness's completion audit (triggers on the design's own tables).
    pub audit: Vec<String>,
    /// The harness attaches its audit to a `status` column (`state = StatusColumn`) or to the
    /// state column a design declares; otherwise the design's `audit` is the whole of it.
    pub state: StateModel,
    /// DDL the harness adds once the design's tables stand (a declared design's view).
    pub harness_ddl: Vec<String>,
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
    /// `:id`, `:error`, `:backoff_base`, `:backoff_factor`, `:backoff_cap`,
    /// `:backoff_jitter` (or `$1`…`$6` in that order) → `status`.
    pub fail: String,
    /// `$1` stale_after → `id`, `status` per reaped job; `None` for a design without a
    /// reaper (a custom directory without reap.sql), where nothing is ever stale.
    pub reap: Option<String>,
    /// As `reap`, counting the reap as a failed attempt.
    pub reap_counting: Option<String>,
    /// The design's ticker, run every [`SqlDesign::tick_every`] on a connection of its own:
    /// rotation's truncation (`$1` the rotation period), or a custom design's tick.sql (no
    /// parameter: its scheduler, e.g. retryable jobs made available); `None` for designs
    /// without one.
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

/// Whether an engine's updates return rows (PostgreSQL's `UPDATE … RETURNING`), or are
/// followed by a read (MariaDB: the claim's `mark_claimed.sql`, the reaper's
/// `find_stale.sql`, statuses read back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Returning {
    Rows,
    Nothing,
}

/// A statement a custom design's check prepares: its file, its text and the columns the
/// harness reads from it.
pub type StatementCheck<'a> = (&'static str, &'a str, &'static [&'static str]);

impl Statements {
    /// Each statement the design has, with the columns the harness reads from it.
    pub fn checks(&self, returning: Returning) -> Vec<StatementCheck<'_>> {
        fn optional(s: &Option<String>) -> &str {
            s.as_deref().unwrap_or_default()
        }
        let (updated, reaped): (&[&str], &[&str]) = match returning {
            Returning::Rows => (&["status"], &["id", "status"]),
            Returning::Nothing => (&[], &[]),
        };
        let checks: [StatementCheck; 16] = [
            ("tick.sql", optional(&self.tick), &[]),
            ("enqueue.sql", &self.enqueue, &["id"]),
            ("prefill.sql", &self.prefill, &["id"]),
            ("claim.sql", &self.claim, &["id", "type", "payload"]),
            ("mark_claimed.sql", optional(&self.mark_claimed), &[]),
            ("complete.sql", &self.complete, &[]),
            ("fail.sql", &self.fail, updated),
            ("find_stale.sql", optional(&self.find_stale), &["id"]),
            ("reap.sql", optional(&self.reap), reaped),
            ("reap_counting.sql", optional(&self.reap_counting), reaped),
            ("pending_count.sql", &self.pending_count, &[]),
            ("status_counts.sql", &self.status_counts, &[]),
            (
                "ledger_check.sql",
                &self.ledger_check,
                &["id", "status", "expected"],
            ),
            ("untracked.sql", &self.untracked, &["id", "status"]),
            (
                "job_status.sql",
                &self.job_status,
                &["id", "status", "retry_count"],
            ),
            ("jobs_by_key.sql", &self.jobs_by_key, &["id", "key"]),
        ];
        checks
            .into_iter()
            .filter(|(_, text, _)| !text.is_empty())
            .collect()
    }
}

/// A statement must return `columns`; it returns `returned`.
pub fn missing_columns(columns: &[&str], returned: &[&str]) -> Result<(), String> {
    let Some(missing) = columns.iter().find(|c| !returned.contains(c)) else {
        return Ok(());
    };
    let returned = match returned.is_empty() {
        true => "none".to_string(),
        false => returned.join(", "),
    };
    Err(format!(
        "must return the columns {}; it returns {returned} (no column {missing})",
        columns.join(", ")
    ))
}

/// How a design records where a job is, which is what the completion audit attaches to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateModel {
    /// A `status` column (`pending`, `processing`, `done`, `dead_letter`): the harness's
    /// audit records each update of it to a final status.
    StatusColumn,
    /// No status column (a visibility timeout, a read count, rows deleted or moved): the
    /// design brings its own audit, and its proof statements derive each job's status.
    OwnAudit,
    /// A state column and state names the design declares (design.toml): the harness's
    /// audit is this trigger on it.
    Declared(String),
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
    /// The channel a custom design notifies (design.toml `wake_up`); `None`: the run's own,
    /// which the harness's enqueue notifies (the notify design).
    pub channel: Option<String>,
    /// The hot table: what the statistics, VACUUM, ANALYZE and readers look at.
    pub table: String,
    /// The status words its statements may return besides the harness's.
    pub words: StateWords,
    /// The design's other tables that keep jobs (an archive, kept dead letters): the
    /// sampler reports their rows and size.
    pub side_tables: Vec<&'static str>,
    /// What the claim binds, in placeholder order.
    pub claim_binds: Vec<ClaimParam>,
    /// What the failure update binds, in placeholder order.
    pub fail_binds: Vec<FailParam>,
    /// What MariaDB's mark_claimed.sql binds, in placeholder order.
    pub mark_binds: Vec<MarkParam>,
    /// The value bound to `:visibility_timeout`.
    pub visibility_timeout: Duration,
    /// The value bound to the ticker's `$1` (rotation's period); `None`: the ticker takes
    /// no parameter (a custom design's tick.sql).
    pub rotation_period: Option<Duration>,
    /// How often the ticker runs.
    pub tick_every: Duration,
    /// The design's value for each of the harness's priorities, where it declares its own
    /// direction and range (design.toml `[priority]`); the harness's values otherwise.
    pub priorities: Option<std::collections::BTreeMap<i32, i32>>,
    /// The values the reaper's statements take, in order: the threshold, then (a custom
    /// design's named reap.sql) the back-off's base, factor, cap and jitter.
    pub reap_values: usize,
    /// Where a custom design's files are, and their record (name, SHA-256s).
    pub dir: Option<PathBuf>,
    pub files: Option<crate::backend::design_files::DesignFiles>,
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
            channel: None,
            table: "job_queue".into(),
            words: StateWords::default(),
            side_tables: Vec::new(),
            claim_binds: Vec::new(),
            fail_binds: Vec::new(),
            mark_binds: Vec::new(),
            visibility_timeout: plan
                .visibility_timeout
                .unwrap_or(DEFAULT_VISIBILITY_TIMEOUT),
            rotation_period: Some(plan.rotation_period),
            priorities: None,
            reap_values: 1,
            tick_every: DEFAULT_TICK,
            dir: None,
            files: None,
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
            table: self.table.clone(),
            claim_sql: self.sql.claim.trim().to_string(),
            files: self.files.clone(),
            ticks: self.sql.tick.is_some().then_some(self.tick_every),
        }
    }

    /// Replaces the named parameters of the claim and the failure update by `style`'s
    /// placeholders and records what to bind to each; a fail.sql written with positional
    /// placeholders binds `positional_fail`, the engine's order.
    pub fn bind_statements(
        self,
        queue: &QueuePlan,
        style: Placeholders,
        positional_fail: &[FailParam],
    ) -> Result<Self, DesignError> {
        let d = self.bind_claim(style)?.bind_mark(style)?.bind_fail(
            &queue.backoff,
            style,
            positional_fail,
        )?;
        let hides = d.claim_binds.contains(&ClaimParam::VisibilityTimeout)
            || d.mark_binds.contains(&MarkParam::VisibilityTimeout);
        if queue.variant.visibility_timeout.is_some() && !hides {
            return Err(DesignError {
                file: d.file("claim.sql"),
                reason: "takes no :visibility_timeout, but the scenario sets queue.visibility_timeout: use it in the claim, or leave the key out".into(),
            });
        }
        Ok(d)
    }

    /// The claim's binds; a claim with `$1` / `?` of its own and batch claims binds the
    /// batch size there. A batch size the claim never takes is refused, as is a name the
    /// harness does not bind.
    fn bind_claim(mut self, style: Placeholders) -> Result<Self, DesignError> {
        let fail = |reason: String| DesignError {
            file: self.file("claim.sql"),
            reason,
        };
        let r = rewrite::<ClaimParam>(&self.sql.claim, style).map_err(fail)?;
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
        self.sql.claim = r.sql;
        self.claim_binds = binds;
        Ok(self)
    }

    /// MariaDB's mark_claimed.sql binds: its names, or the claimed id(s) alone.
    fn bind_mark(mut self, style: Placeholders) -> Result<Self, DesignError> {
        let Some(mark) = &self.sql.mark_claimed else {
            return Ok(self);
        };
        let r = rewrite::<MarkParam>(mark, style).map_err(|reason| DesignError {
            file: self.file("mark_claimed.sql"),
            reason,
        })?;
        self.mark_binds = match r.binds.is_empty() {
            true => vec![MarkParam::Id],
            false => r.binds,
        };
        self.sql.mark_claimed = Some(r.sql);
        Ok(self)
    }

    /// The failure update's binds: its names, or the engine's positional order. A named
    /// fail.sql must take `:id`, and each back-off value the scenario sets.
    fn bind_fail(
        mut self,
        backoff: &BackoffPlan,
        style: Placeholders,
        positional: &[FailParam],
    ) -> Result<Self, DesignError> {
        let fail = |reason: String| DesignError {
            file: self.file("fail.sql"),
            reason,
        };
        let r = rewrite::<FailParam>(&self.sql.fail, style).map_err(fail)?;
        if r.binds.is_empty() {
            self.fail_binds = positional.to_vec();
            return Ok(self);
        }
        if r.positional {
            return Err(fail(
                "mixes named parameters with positional ones: write every value by its name".into(),
            ));
        }
        if !r.binds.contains(&FailParam::Id) {
            return Err(fail(
                "takes no :id: the failure update must say which job failed".into(),
            ));
        }
        if let Some((key, param)) = set_but_not_taken(backoff, &r.binds) {
            return Err(fail(format!(
                "takes no :{}, but the scenario sets {key}: use it in the back-off, or leave the key out",
                param.name()
            )));
        }
        self.sql.fail = r.sql;
        self.fail_binds = r.binds;
        Ok(self)
    }

    /// Jobs one claim takes at most.
    pub fn claim_size(&self) -> u32 {
        match self.claim {
            ClaimShape::Single => 1,
            ClaimShape::Batch(n) => n,
        }
    }

    /// The harness's status for a status word the statement of `file` returned: its own
    /// words, or a state the design declares. Anything else stops the run (retrying cannot
    /// help), naming the file: never a zero, never a rollback.
    pub fn status(&self, file: &str, word: &str) -> Result<JobStatus, BackendError> {
        self.words
            .status(&self.file(file), word)
            .map_err(|e| BackendError::new(ErrorClass::Permanent, e))
    }

    /// Status words of `file`'s rows, as the harness's statuses.
    pub fn statuses<T>(
        &self,
        file: &str,
        rows: Vec<(T, String)>,
    ) -> Result<Vec<(T, JobStatus)>, BackendError> {
        rows.into_iter()
            .map(|(x, w)| Ok((x, self.status(file, &w)?)))
            .collect()
    }

    /// The value bound for a job of the harness's `priority`.
    pub fn priority(&self, priority: i32) -> i32 {
        self.priorities
            .as_ref()
            .and_then(|m| m.get(&priority).copied())
            .unwrap_or(priority)
    }

    /// How to name one of the design's statement files in a message.
    pub fn file(&self, name: &str) -> String {
        match &self.dir {
            Some(dir) => dir.join(name).display().to_string(),
            None => format!("{} variant's {name}", self.label),
        }
    }
}

/// A back-off value the scenario sets (away from the seed's formula) that a named fail.sql
/// never takes, with its key.
fn set_but_not_taken(b: &BackoffPlan, taken: &[FailParam]) -> Option<(&'static str, FailParam)> {
    let seed = BackoffPlan::seed();
    let set = [
        (
            "queue.backoff.base",
            FailParam::BackoffBase,
            b.base != seed.base,
        ),
        (
            "queue.backoff.factor",
            FailParam::BackoffFactor,
            b.factor != seed.factor,
        ),
        ("queue.backoff.cap", FailParam::BackoffCap, b.cap.is_some()),
        (
            "queue.backoff.jitter",
            FailParam::BackoffJitter,
            b.jitter != Jitter::None,
        ),
    ];
    set.into_iter()
        .find(|(_, param, set)| *set && !taken.contains(param))
        .map(|(key, param, _)| (key, param))
}
