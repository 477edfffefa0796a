//! A user's own design, read from a directory of its own: its statements (the seed's for
//! any it leaves out), its design.toml's declarations, the files only some engines or a
//! library's workers take, and the SHA-256 of everything in it.

use super::declared::{DESIGN_FILE, Declaration, DeclaredSql};
use super::design::*;
use super::names;
use crate::backend::design_files::DesignFiles;
use crate::backend::queue::{QueuePlan, required_files};
use crate::backend::seam::{DesignError, WakeUp};
use std::path::Path;

/// A user's design: the seed's behaviour and defaults (`seed`), its statements from
/// `plan.dir`. A claim.sql takes `$1` (how many) and its complete.sql `$1` (ids[]) when
/// `queue.claim_batch` is above 1; otherwise both take one job, as the seed's.
pub fn read_custom(
    queue: &QueuePlan,
    seed: SqlDesign,
    returning: Returning,
    declared: Option<&DeclaredSql>,
) -> Result<SqlDesign, DesignError> {
    let plan = &queue.variant;
    let dir = plan.dir.as_deref().unwrap_or(Path::new("."));
    let declaration = Declaration::read(dir)?;
    let priorities = match &declaration.priority {
        Some(p) => Some(p.map(&queue.priorities).map_err(|reason| DesignError {
            file: dir.join(DESIGN_FILE).display().to_string(),
            reason,
        })?),
        None => None,
    };
    let external = declaration.worker.is_some();
    let defaults = declared_defaults(dir, &declaration, declared, seed.sql.clone())?;
    let (sql, binds, files) = custom_statements(dir, defaults, returning, external)?;
    engine_files(dir, &sql, returning)?;
    let sql = declared_audit(sql, &declaration, declared);
    let design = SqlDesign {
        label: format!("custom:{}", dir.display()),
        rotation_period: None,
        reap_values: binds.reap_values,
        wake_up: match declaration.wake_up {
            Some(_) => WakeUp::Notify,
            None => WakeUp::Poll,
        },
        channel: declaration.wake_up.clone(),
        priorities,
        tick_every: declaration.tick_interval.unwrap_or(DEFAULT_TICK),
        table: declaration.table.clone(),
        words: declaration.words(),
        sql,
        dir: Some(dir.to_path_buf()),
        files: Some(files),
        ..seed
    };
    let design = match plan.claim_batch {
        n if n > 1 => design.batched(n),
        _ => design,
    };
    let complete = match binds.complete {
        Some(names::Completes::OneJob) => CompleteShape::PerJob,
        Some(names::Completes::Batch) => CompleteShape::PerBatch,
        None => design.complete,
    };
    Ok(SqlDesign { complete, ..design })
}

/// The name of the view the harness makes of a declared design's jobs (declared/view.sql).
const HARNESS_VIEW: &str = "dbq_bench_job_state";

/// The statements a design's files replace: the seed's, or, for a design that declares its
/// states, the engine's statements over the view of them.
fn declared_defaults(
    dir: &Path,
    d: &Declaration,
    declared: Option<&DeclaredSql>,
    seed: Statements,
) -> Result<Statements, DesignError> {
    let Some(t) = declared else {
        let refused = match (&d.states, &d.wake_up) {
            (Some(_), _) => "[states]",
            (None, Some(_)) => "wake_up",
            (None, None) => return Ok(seed),
        };
        return Err(DesignError {
            file: dir.join(DESIGN_FILE).display().to_string(),
            reason: format!(
                "declares {refused}, which only PostgreSQL reads so far: on MariaDB, keep a status column in the harness's words (pending, processing, done, dead_letter) and let workers poll, or bring audit.sql and the proof's statements"
            ),
        });
    };
    let Some(states) = &d.states else {
        return Ok(seed);
    };
    // The proof reads the harness's view over the table, or the design's own.
    let (harness_ddl, read) = match &states.view {
        Some(view) => (vec![], view.as_str()),
        None => (vec![t.fill(t.view, d, states)], HARNESS_VIEW),
    };
    let over = |template: &str| template.replace(HARNESS_VIEW, read);
    Ok(Statements {
        harness_ddl,
        pending_count: t.fill(t.pending_count, d, states),
        status_counts: over(t.status_counts),
        job_status: over(t.job_status),
        ledger_check: over(t.ledger_check),
        untracked: over(t.untracked),
        jobs_by_key: over(t.jobs_by_key),
        ..seed
    })
}

/// A declared design without an audit.sql of its own gets the harness's audit on its state
/// column.
fn declared_audit(sql: Statements, d: &Declaration, declared: Option<&DeclaredSql>) -> Statements {
    match (&d.states, declared, &sql.state) {
        (Some(states), Some(t), StateModel::StatusColumn) => Statements {
            state: StateModel::Declared(t.fill(t.trigger, d, states)),
            ..sql
        },
        _ => sql,
    }
}

/// The files one engine's shape needs: on MariaDB (no `UPDATE … RETURNING`) the claim's
/// and the reaper's second statements; on PostgreSQL, neither.
fn engine_files(dir: &Path, sql: &Statements, returning: Returning) -> Result<(), DesignError> {
    let fail = |name: &str, reason: &str| {
        Err(DesignError {
            file: dir.join(name).display().to_string(),
            reason: reason.to_string(),
        })
    };
    match returning {
        Returning::Rows if sql.mark_claimed.is_some() => fail(
            "mark_claimed.sql",
            "is MariaDB's (its claim is a SELECT and then an UPDATE); on PostgreSQL claim.sql updates and returns the rows itself: remove the file",
        ),
        Returning::Rows if sql.find_stale.is_some() => fail(
            "find_stale.sql",
            "is MariaDB's (its reaper locks, then updates); on PostgreSQL reap.sql updates and returns the rows itself: remove the file",
        ),
        Returning::Nothing if sql.mark_claimed.is_none() => fail(
            "mark_claimed.sql",
            "is missing; on MariaDB (no UPDATE … RETURNING) claim.sql is the locking SELECT and mark_claimed.sql the UPDATE of what it locked (:id, and :visibility_timeout if it hides jobs)",
        ),
        Returning::Nothing if sql.tick.is_some() => fail(
            "tick.sql",
            "runs on PostgreSQL only so far; on MariaDB, let the claim take what the ticker would make available",
        ),
        Returning::Nothing if sql.reap.is_some() != sql.find_stale.is_some() => fail(
            "find_stale.sql",
            "and reap.sql come together on MariaDB: find_stale.sql locks the stale jobs (`?` stale_after in microseconds → id), reap.sql updates them (`?` their ids as a JSON array)",
        ),
        _ => Ok(()),
    }
}

/// Reads a custom design's directory: the required files must exist; the others replace
/// the seed's when present. Also the SHA-256 over every file of the directory (its glue
/// and anything else beside the SQL), in path order.
fn custom_statements(
    dir: &Path,
    seed: Statements,
    returning: Returning,
    external: bool,
) -> Result<(Statements, names::Binds, DesignFiles), DesignError> {
    let mut got = read_files(dir, external)?;
    let files = DesignFiles::read(dir).map_err(|e| DesignError {
        file: dir.display().to_string(),
        reason: format!("cannot be read whole for its digest: {e}"),
    })?;
    got.remove(DESIGN_FILE);
    let bound = [
        "claim.sql",
        "mark_claimed.sql",
        "fail.sql",
        "schema.sql",
        "audit.sql",
    ];
    let mut statements: names::Files = got
        .iter()
        .filter(|(name, _)| !bound.contains(name))
        .map(|(name, text)| (*name, text.clone()))
        .collect();
    let binds = names::name_the_rest(dir, &mut statements, returning == Returning::Rows)?;
    got.extend(statements);
    if external {
        got.insert("claim.sql", Some(CLAIMS_NOTHING.into()));
        got.insert("complete.sql", Some(COMPLETES_NOTHING.into()));
    }
    Ok((fill(got, seed), binds, files))
}

/// The claim and completion of a design whose workers are a library's own processes: the
/// harness's workers never run on it, and the rehearsal's claim opens its transaction (the
/// completion prepared, as a worker's is) and finds nothing.
const CLAIMS_NOTHING: &str =
    "SELECT 0::bigint AS id, ''::text AS type, '{}'::jsonb AS payload WHERE false";
const COMPLETES_NOTHING: &str = "SELECT $1::bigint AS id WHERE false";

/// Every file a custom design may bring, in name order (so the hash does not depend on the
/// order of the lists): the required ones must exist and none may be empty.
fn read_files(dir: &Path, external: bool) -> Result<names::Files<'static>, DesignError> {
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
    let mut got = names::Files::new();
    let required = required_files(external);
    for name in required {
        let text = read(name)?.ok_or_else(|| DesignError {
            file: dir.join(name).display().to_string(),
            reason: format!("is missing; a custom variant needs {}", required.join(", ")),
        })?;
        got.insert(name, Some(text));
    }
    if let Some(name) = LIBRARY_DOES
        .into_iter()
        .find(|name| external && dir.join(name).exists())
    {
        return Err(DesignError {
            file: dir.join(name).display().to_string(),
            reason: format!(
                "is a statement of the harness's own workers, but {DESIGN_FILE} declares [worker]: the library's processes claim, finish and rescue jobs themselves; remove the file"
            ),
        });
    }
    for name in OPTIONAL_FILES.into_iter().chain([DESIGN_FILE]) {
        got.insert(name, read(name)?);
    }
    Ok(got)
}

/// The design's statements: its files, and the seed's (or the declared defaults) where it
/// brings none. A design's reaper is its own: the seed's would not fit its table.
fn fill(mut got: names::Files<'_>, seed: Statements) -> Statements {
    let reap = got.remove("reap.sql").flatten();
    let reap_counting = got.remove("reap_counting.sql").flatten();
    let own_audit = got.remove("audit.sql").flatten();
    let tick = got.remove("tick.sql").flatten();
    let mark_claimed = got.remove("mark_claimed.sql").flatten();
    let find_stale = got.remove("find_stale.sql").flatten();
    let mut take = |name: &str, default: String| got.remove(name).flatten().unwrap_or(default);
    Statements {
        schema: vec![take("schema.sql", String::new())],
        state: match own_audit {
            Some(_) => StateModel::OwnAudit,
            None => StateModel::StatusColumn,
        },
        audit: own_audit.into_iter().collect(),
        harness_ddl: seed.harness_ddl,
        enqueue: take("enqueue.sql", String::new()),
        claim: take("claim.sql", String::new()),
        complete: take("complete.sql", String::new()),
        fail: take("fail.sql", String::new()),
        prefill: take("prefill.sql", seed.prefill),
        reap,
        reap_counting,
        tick,
        pending_count: take("pending_count.sql", seed.pending_count),
        status_counts: take("status_counts.sql", seed.status_counts),
        ledger_check: take("ledger_check.sql", seed.ledger_check),
        untracked: take("untracked.sql", seed.untracked),
        job_status: take("job_status.sql", seed.job_status),
        jobs_by_key: take("jobs_by_key.sql", seed.jobs_by_key),
        mark_claimed,
        find_stale,
    }
}

/// The files a custom design may bring to replace the seed's; `mark_claimed.sql` and
/// `find_stale.sql` are MariaDB's (the claim's and the reaper's first halves).
/// What a library's own workers do, so a design with `[worker]` brings no file for it.
const LIBRARY_DOES: [&str; 8] = [
    "claim.sql",
    "complete.sql",
    "fail.sql",
    "mark_claimed.sql",
    "find_stale.sql",
    "reap.sql",
    "reap_counting.sql",
    "tick.sql",
];

const OPTIONAL_FILES: [&str; 13] = [
    "tick.sql",
    "audit.sql",
    "mark_claimed.sql",
    "find_stale.sql",
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
