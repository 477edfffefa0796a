//! One run, start to finish: provision → set-up (namespace, queue, prefill) → load steps
//! (phases with faults, drain, proof, results) → tear-down. The stages live in
//! [`session`]; the fleets of a step in [`load`], its workers' group formed first
//! ([`forming`]). A run whose harness died is proved from its journal by [`prove`].

mod drain;
mod fleets;
mod forming;
mod load;
mod prove;
mod session;
mod timeline;

pub use prove::{JournalProof, PROOF_FILE, prove_journal};
pub use session::{ServerRecord, Session};

use crate::backend::Backend;
use crate::error::Failure;
use crate::metrics::Ledger;
use crate::provider::{self, Server};
use crate::report::design::ClaimRule;
use crate::report::{BystanderSetup, DesignOptions, RunResults, RunSetup};
use crate::scenario::Plan;
use crate::status::{self, Status};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;
use tokio_util::sync::CancellationToken;

/// What the proof needs to know of a plan, and whether its consumers had the chance to
/// finish every job (a run's own end, or a journal's replay after the harness died).
fn proof_options(plan: &Plan, drained: bool) -> crate::accounting::ProofOptions {
    crate::accounting::ProofOptions {
        audit: plan.completion_audit,
        drained,
        outbox: plan.producers.outbox.is_some(),
        reported_by_library: plan.queue.variant.workers.is_some(),
        at_least_once: plan.database.engine.supports().at_least_once_completions,
    }
}

/// What the report says the run was set up to do: `plan` as plain data.
pub fn setup_of(plan: &Plan) -> RunSetup {
    let v = &plan.queue.variant;
    let library = v.workers.is_some();
    RunSetup {
        name: plan.name.clone(),
        description: plan.description.clone(),
        file: plan.source.clone(),
        seed: plan.seed,
        scenario_sha256: sha256_hex(plan.resolved_toml().as_bytes()),
        engine: plan.database.engine,
        database_settings: plan.database.settings.clone(),
        claim_rule: ClaimRule::of(library, plan.consumers.claim_mode),
        poll_interval: plan.consumers.poll_interval,
        stale_statistics: plan.queue.stale_statistics,
        workers: plan.consumers.count as u32,
        library,
        producers: plan.producers.count as u64,
        producer_connections: plan.producers.max_count as u64,
        bystander: plan.bystander.map(|b| BystanderSetup {
            rate_per_s: b.rate,
            rows: b.rows,
        }),
        design: DesignOptions {
            variant: v.name.as_str().to_string(),
            fillfactor: v.fillfactor,
            unlogged: v.unlogged,
            custom_dir: v.dir.as_ref().map(|d| d.display().to_string()),
        },
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// How a run is carried out (as opposed to what it does, which is the plan).
#[derive(Clone)]
pub struct RunOptions {
    /// Results directory; default `results/<UTC time>-<scenario>`.
    pub out_dir: Option<PathBuf>,
    /// Leave the run's namespace (and a server the run started) in place.
    pub keep: bool,
    /// Where progress lines and warnings go.
    pub status: Status,
    /// Show the live progress line on stderr (only sensible on a terminal).
    pub progress_bar: bool,
    /// The `dbq-bench` executable that runs worker processes (default: this executable).
    pub worker_exe: Option<PathBuf>,
    /// Stop the load as soon as a threshold fails (judged after each phase).
    pub abort_on_fail: bool,
    /// A capacity result for the verdict to cite (`run --capacity DIR`).
    pub capacity: Option<crate::report::article::CapacityCitation>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            out_dir: None,
            keep: false,
            status: status::for_command(true),
            progress_bar: false,
            worker_exe: None,
            abort_on_fail: false,
            capacity: None,
        }
    }
}

/// What a finished (or interrupted) run leaves behind.
pub struct RunOutcome {
    pub results: RunResults,
    pub out_dir: PathBuf,
    /// The harness's ledger (settled), for re-checking the table afterwards.
    pub ledger: Ledger,
    /// The queue, when `keep` left it in place.
    pub kept_queue: Option<Arc<dyn Backend>>,
    /// How to reach a server that `keep` left running.
    pub kept_server: Option<String>,
}

/// Set in the environment, a run panics right after its set-up: the suite's way to check
/// that a bug still drops the run's namespace and exits with one line.
pub const PANIC_AFTER_SET_UP: &str = "DBQ_BENCH_TEST_PANIC_AFTER_SET_UP";

/// Provisions the plan's server, saying what it got.
pub async fn provision(plan: &Plan, status: &Status) -> Result<Arc<Server>, Failure> {
    status.line(&format!(
        "provisioning {} ({})…",
        plan.database.engine.label(),
        plan.database.provider.as_str()
    ));
    // Provisioning is not cut short by Ctrl-C (a half-created container could be left
    // behind); the caller honours an interruption as soon as it returns.
    let server = provider::provision(&plan.database).await?;
    for line in &server.skipped {
        status.line(line);
    }
    let version: Vec<&str> = server.version.split_whitespace().take(2).collect();
    status.line(&format!(
        "{} — {}; {}",
        server.description,
        version.join(" "),
        server.place.words()
    ));
    Ok(Arc::new(server))
}

/// Tears down a server every task has let go of (or, with `keep`, leaves it running and
/// says how to reach it).
pub async fn release(server: Arc<Server>, keep: bool, status: &Status) -> Option<String> {
    match Arc::try_unwrap(server) {
        Ok(server) if keep && server.is_owned() => Some(server.leak()),
        Ok(server) => {
            if let Err(e) = server.teardown().await {
                status.warn(&format!("teardown: {e:#}"));
            }
            None
        }
        Err(_) => {
            status.warn("the server is still in use and was not torn down");
            None
        }
    }
}

/// Runs a plan. `shutdown` (Ctrl-C) stops the load, keeps partial results and tears down
/// what the run started.
pub async fn run(
    plan: &Plan,
    opts: &RunOptions,
    shutdown: CancellationToken,
) -> Result<RunOutcome, Failure> {
    let server = provision(plan, &opts.status).await?;
    let outcome = if shutdown.is_cancelled() {
        Err(Failure::Interrupted)
    } else {
        run_on(plan, opts, &server, &shutdown).await
    };
    // Every task that shared the server has ended with the run.
    let kept_server = release(server, opts.keep, &opts.status).await;
    outcome.map(|mut o| {
        o.kept_server = kept_server;
        o
    })
}

/// Runs a plan on a server provisioned by the caller (a matrix shares one server between
/// its cells), in a namespace of its own; the server is left running.
pub async fn run_on(
    plan: &Plan,
    opts: &RunOptions,
    server: &Arc<Server>,
    shutdown: &CancellationToken,
) -> Result<RunOutcome, Failure> {
    let session = Session::set_up(plan, opts, server, shutdown).await?;
    run_session(session, plan, opts, shutdown).await
}

/// One step on a set-up session, then its tear-down.
pub async fn run_session(
    mut session: Session,
    plan: &Plan,
    opts: &RunOptions,
    shutdown: &CancellationToken,
) -> Result<RunOutcome, Failure> {
    // How the suite checks that a bug still cleans up: a panic with the namespace in place.
    if std::env::var_os(PANIC_AFTER_SET_UP).is_some() {
        panic!("{PANIC_AFTER_SET_UP} is set");
    }
    let result = session.step(plan, opts, shutdown).await;
    let kept = session.tear_down(opts.keep, &opts.status).await;
    result.map(|mut o| {
        o.kept_queue = kept;
        o
    })
}

fn utc_now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

/// `results/<UTC time>-<name>`, made unique.
pub fn default_out_dir(name: &str) -> PathBuf {
    let stamp = utc_now().replace(':', "-");
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let base = PathBuf::from("results").join(format!("{stamp}-{safe}"));
    let mut dir = base.clone();
    let mut n = 2;
    while dir.exists() {
        dir = PathBuf::from(format!("{}-{n}", base.display()));
        n += 1;
    }
    dir
}

#[cfg(test)]
mod tests;
