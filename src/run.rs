//! One run, start to finish: provision → schema → prefill → phases (with faults) → drain →
//! proof → results → teardown. This is the only module that knows the order of the stages;
//! each stage lives in its own module.

use crate::accounting::{self, ProofOptions};
use crate::clock::RunClock;
use crate::db::{self, RunSchema, Server};
use crate::error::{Failure, InputError};
use crate::faults::{self, FaultContext, PhaseFaults};
use crate::fleet::jobs::JobFactory;
use crate::fleet::process::{self, WorkerConfig};
use crate::fleet::producer::{ProducerFleet, ScheduledPhase};
use crate::fleet::reaper::StaleJobReaper;
use crate::fleet::registry::WorkerRegistry;
use crate::fleet::{FleetContext, consumer};
use crate::metrics::{
    DbSampler, Event, Ledger, LiveStats, PhaseWindow, Recorder, SnapshotRequest, WindowKind,
};
use crate::progress::Progress;
use crate::queue::Queue;
use crate::report::{self, RunFacts, RunResults, Summary};
use crate::scenario::{FaultSpec, Plan};
use anyhow::{Context, Result};
use sqlx::Connection;
use sqlx::postgres::PgConnection;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio_util::sync::CancellationToken;

/// How a run is carried out (as opposed to what it does, which is the plan).
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Results directory; default `results/<UTC time>-<scenario>`.
    pub out_dir: Option<PathBuf>,
    /// Leave the run schema (and a server the run started) in place.
    pub keep: bool,
    /// Print one-line status messages (provisioning, load started, draining) on stderr.
    pub status: bool,
    /// Show the live progress line on stderr (only sensible on a terminal).
    pub progress_bar: bool,
    /// The `dbq-bench` executable that runs worker processes (default: this executable).
    pub worker_exe: Option<PathBuf>,
    /// Stop the load as soon as a threshold fails (judged after each phase).
    pub abort_on_fail: bool,
}

/// What a finished (or interrupted) run leaves behind.
pub struct RunOutcome {
    pub results: RunResults,
    pub out_dir: PathBuf,
    /// The harness's ledger (settled), for re-checking the table afterwards.
    pub ledger: Ledger,
    /// The run schema, when `keep` left it in place.
    pub kept_schema: Option<RunSchema>,
    /// How to reach a server that `keep` left running.
    pub kept_server: Option<String>,
}

/// Time between starting the fleets and the first phase, so every producer is connected
/// before its first scheduled job.
const LOAD_LEAD: Duration = Duration::from_millis(200);
const PREFILL_BATCH: usize = 5_000;
/// How often the drain asks the table about in-doubt outcomes.
const SETTLE_EVERY: Duration = Duration::from_millis(500);

/// Runs a plan. `shutdown` (Ctrl-C) stops the load, keeps partial results and tears down
/// what the run started.
pub async fn run(
    plan: &Plan,
    opts: &RunOptions,
    shutdown: CancellationToken,
) -> Result<RunOutcome, Failure> {
    let clock = RunClock::start();
    let started_at = utc_now();
    if opts.status {
        eprintln!(
            "dbq-bench: provisioning PostgreSQL ({})…",
            plan.database.provider.as_str()
        );
    }
    // Provisioning is not cut short by Ctrl-C (a half-created container could be left
    // behind); the interruption is honoured as soon as it returns.
    let server = Arc::new(db::provision(&plan.database).await?);
    if opts.status {
        for line in &server.skipped {
            eprintln!("dbq-bench: {line}");
        }
        let version: Vec<&str> = server.version.split_whitespace().take(2).collect();
        eprintln!("dbq-bench: {} — {}", server.description, version.join(" "));
    }
    let outcome = if shutdown.is_cancelled() {
        Err(Failure::Interrupted)
    } else {
        run_on_server(plan, opts, &server, clock, started_at, &shutdown).await
    };
    // Every task that shared the server has ended with the run.
    let kept_server = match Arc::try_unwrap(server) {
        Ok(server) if opts.keep && server.is_owned() => Some(server.leak()),
        Ok(server) => {
            if let Err(e) = server.teardown().await {
                eprintln!("dbq-bench: warning: teardown: {e:#}");
            }
            None
        }
        Err(_) => {
            eprintln!("dbq-bench: warning: the server is still in use and was not torn down");
            None
        }
    };
    outcome.map(|mut o| {
        o.kept_server = kept_server;
        o
    })
}

/// Runs a plan on a server provisioned by the caller (a matrix shares one server between
/// its cells), in a schema of its own; the server is left running.
pub async fn run_on(
    plan: &Plan,
    opts: &RunOptions,
    server: &Arc<Server>,
    shutdown: &CancellationToken,
) -> Result<RunOutcome, Failure> {
    run_on_server(plan, opts, server, RunClock::start(), utc_now(), shutdown).await
}

async fn run_on_server(
    plan: &Plan,
    opts: &RunOptions,
    server: &Arc<Server>,
    clock: RunClock,
    started_at: String,
    shutdown: &CancellationToken,
) -> Result<RunOutcome, Failure> {
    check_server_faults(plan, server)?;
    let schema = RunSchema::create(server.options(), "dbq_run").await?;
    let result = run_in_schema(plan, opts, server, &schema, clock, started_at, shutdown).await;
    // A server the run owns disappears with its schema at teardown; on a `url` server the
    // schema is dropped here.
    let kept = if opts.keep {
        Some(schema)
    } else {
        if !server.is_owned()
            && let Err(e) = schema.drop_schema().await
        {
            eprintln!("dbq-bench: warning: {e:#}");
        }
        None
    };
    result.map(|mut o| {
        o.kept_schema = kept;
        o
    })
}

/// `restart_server` needs a server the run started.
fn check_server_faults(plan: &Plan, server: &Server) -> Result<(), InputError> {
    for (i, p) in plan.phases.iter().enumerate() {
        for (j, f) in p.faults.iter().enumerate() {
            if matches!(f, FaultSpec::RestartServer { .. }) && !server.is_owned() {
                return Err(InputError::new(
                    &plan.source,
                    format!("phases[{i}].faults[{j}]"),
                    format!(
                        "restart_server needs a server the run starts (provider container or local), not {}",
                        server.provider.as_str()
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn run_in_schema(
    plan: &Plan,
    opts: &RunOptions,
    server: &Arc<Server>,
    schema: &RunSchema,
    clock: RunClock,
    started_at: String,
    shutdown: &CancellationToken,
) -> Result<RunOutcome, Failure> {
    let Installed {
        queue,
        server_settings,
        key_prefix,
        factory,
        prefilled,
        claim_plan_start,
    } = set_up(plan, opts, schema, clock, shutdown).await?;
    let Timeline {
        windows,
        scheduled,
        phase_faults,
        load_start_us,
        load_start_wall,
        end_us: t,
    } = Timeline::of(plan, clock);

    let live = Arc::new(LiveStats::new());
    let (events, rx) = tokio::sync::mpsc::unbounded_channel();
    for event in prefilled.events {
        let _ = events.send(event);
    }
    let recorder = Recorder::new(
        windows.clone(),
        load_start_us,
        plan.producers.late_after,
        live.clone(),
    );
    let (snapshot_requests, snapshots) = tokio::sync::mpsc::unbounded_channel();
    let recorder = tokio::spawn(recorder.run(rx, snapshots, clock, load_start_wall));
    let ctx = FleetContext {
        queue: queue.clone(),
        schema: schema.clone(),
        clock,
        events,
    };

    let sampler_stop = CancellationToken::new();
    let mut probes: Vec<(u64, String)> = windows
        .iter()
        .filter(|w| w.kind == WindowKind::Phase)
        .map(|w| (w.start_us, format!("start of {}", w.name)))
        .collect();
    probes.push((t, "end of the last phase".into()));
    let sampler = DbSampler {
        queue: queue.clone(),
        schema: schema.clone(),
        clock,
        events: ctx.events.clone(),
        interval: plan.sampler_interval,
        probes,
    };
    let sampler = tokio::spawn(sampler.run(sampler_stop.clone()));

    let stop_consumers = CancellationToken::new();
    let registry = Arc::new(WorkerRegistry::new(plan.consumers.count));
    let mut consumers = if plan.consumers.processes {
        let config = WorkerConfig {
            slot: 0,
            url: schema.url(),
            schema: schema.name.clone(),
            clock_epoch_ns: clock.epoch_ns(),
            seed: plan.seed,
            consumers: plan.consumers.clone(),
            queue: plan.queue.clone(),
        };
        let exe = opts
            .worker_exe
            .clone()
            .or_else(|| std::env::current_exe().ok())
            .unwrap_or_else(|| "dbq-bench".into());
        process::spawn_processes(&exe, &config, &ctx, &registry, &stop_consumers)
    } else {
        consumer::spawn_tasks(&plan.consumers, plan.seed, &ctx, &registry, &stop_consumers)
    };
    let reaper = plan.reaper.map(|r| {
        let reaper = StaleJobReaper {
            interval: r.interval,
            stale_after: r.stale_after,
            count_as_attempt: r.count_as_attempt,
        };
        tokio::spawn(reaper.run(ctx.clone(), stop_consumers.clone()))
    });
    // Stopped by Ctrl-C, or by --abort-on-fail when a threshold fails during the run.
    let stop_load = shutdown.child_token();
    let watcher = (opts.abort_on_fail && !plan.thresholds.is_empty()).then(|| {
        tokio::spawn(watch_thresholds(
            plan.thresholds.clone(),
            windows.clone(),
            clock,
            snapshot_requests.clone(),
            stop_load.clone(),
        ))
    });
    drop(snapshot_requests);
    let mut producers = ProducerFleet {
        count: plan.producers.count,
        arrival: plan.producers.arrival,
        factory,
        phases: scheduled,
        seed: plan.seed,
        key_prefix,
        outbox_rollback_rate: plan.producers.outbox.map(|o| o.rollback_rate),
    }
    .spawn(&ctx, &stop_load);
    let fault_ctx = FaultContext {
        clock,
        events: ctx.events.clone(),
        schema: schema.clone(),
        queue: queue.clone(),
        registry: registry.clone(),
        server: server.clone(),
        startup_timeout: plan.database.startup_timeout,
        seed: plan.seed,
        claim_mode: plan.consumers.claim_mode,
    };
    let mut fault_tasks = faults::spawn(&fault_ctx, &phase_faults, &stop_load);
    drop(fault_ctx);

    let progress = Progress::start(live.clone(), windows, clock, opts.progress_bar);
    let say = |msg: String| {
        if opts.status {
            progress.println(&msg);
        }
    };
    say(format!(
        "dbq-bench: load started: {} phase(s), {:.0} s",
        plan.phases.len(),
        plan.phases
            .iter()
            .map(|p| p.duration.as_secs_f64())
            .sum::<f64>()
    ));

    while producers.join_next().await.is_some() {}
    while fault_tasks.join_next().await.is_some() {}
    let aborted_by_threshold = match watcher {
        Some(w) => {
            w.abort();
            w.await.ok().flatten()
        }
        None => None,
    };
    if let Some(t) = &aborted_by_threshold {
        say(format!("dbq-bench: stopped early by --abort-on-fail: {t}"));
    }
    ctx.emit(Event::ProducersStopped {
        at_us: clock.now_us(),
    });

    if !stop_load.is_cancelled() {
        say(format!(
            "dbq-bench: load done; draining (timeout {})",
            humantime::format_duration(plan.drain_timeout)
        ));
    }
    let (drain_s, drain_timed_out) = drain(plan, &ctx, &live, &stop_load, shutdown).await;
    if drain_timed_out {
        say(format!(
            "dbq-bench: the drain timed out after {drain_s:.1} s with {} job(s) unfinished",
            live.snapshot().outstanding
        ));
    }
    stop_consumers.cancel();
    while consumers.join_next().await.is_some() {}
    if let Some(r) = reaper {
        r.await.ok();
    }
    sampler_stop.cancel();
    sampler.await.ok();
    // A new connection: the load's faults may have broken older ones.
    let mut admin = schema.connect().await?;
    if let Ok(probe) = queue.probe_claim(&mut admin).await {
        ctx.emit(Event::ClaimProbe {
            at_us: clock.now_us(),
            label: "after the drain".into(),
            probe,
        });
    }
    drop(ctx);
    let measurements = recorder
        .await
        .context("the recorder stopped unexpectedly")?;
    progress.finish().await;

    let claim_plan_end = queue
        .explain_claim(&mut admin)
        .await
        .context("EXPLAIN of the claim")?;
    let mut ledger = measurements.ledger.clone();
    let proof_options = ProofOptions {
        audit: plan.completion_audit,
        drained: !stop_load.is_cancelled() && !drain_timed_out,
        claim_mode: plan.consumers.claim_mode,
        outbox: plan.producers.outbox.is_some(),
    };
    let proof = accounting::prove(&mut admin, &queue, &mut ledger, proof_options).await?;
    admin.close().await.ok();

    let facts = RunFacts {
        provider: server.provider.as_str().into(),
        server_version: server.version.clone(),
        server_description: server.description.clone(),
        schema: schema.name.clone(),
        started_at,
        ended_at: utc_now(),
        interrupted: shutdown.is_cancelled(),
        drain_s,
        drain_timed_out,
        prefilled: prefilled.count,
        variant: queue.variant().name.clone(),
        claim_sql: queue.claim_sql().trim().into(),
        claim_plan_start,
        claim_plan_end,
        server_settings,
        aborted_by_threshold,
    };
    let mut summary = Summary::build(plan, &measurements, &ledger, proof, facts);
    summary.judge_thresholds(&plan.thresholds);
    let results = RunResults {
        summary,
        db_stats: report::dbstats::rows(&measurements),
        timeline: measurements.timeline,
        hlog: measurements.hlog,
        resolved_scenario: plan.resolved_toml(),
    };
    let out_dir = opts
        .out_dir
        .clone()
        .unwrap_or_else(|| default_out_dir(&plan.name));
    report::write_all(&out_dir, &results)?;
    Ok(RunOutcome {
        results,
        out_dir,
        ledger,
        kept_schema: None,
        kept_server: None,
    })
}

/// What the set-up stage leaves for the load: the installed queue, prefilled and analyzed.
struct Installed {
    queue: Queue,
    server_settings: std::collections::BTreeMap<String, String>,
    key_prefix: String,
    factory: JobFactory,
    prefilled: Prefilled,
    claim_plan_start: Vec<String>,
}

/// Set-up: the variant's schema (a custom one checked before any load), the outbox's
/// orders, the prefill, ANALYZE, and the claim's plan before the load.
async fn set_up(
    plan: &Plan,
    opts: &RunOptions,
    schema: &RunSchema,
    clock: RunClock,
    shutdown: &CancellationToken,
) -> Result<Installed, Failure> {
    let variant_error = |e: crate::queue::CustomError| {
        Failure::Input(InputError::new(&plan.source, "queue.dir", e.to_string()))
    };
    let queue = Queue::new(&plan.queue, &schema.name).map_err(variant_error)?;
    let mut admin = schema.connect().await?;
    let server_settings = db::server_settings(&mut admin)
        .await
        .context("reading server settings")?;
    if plan.queue.variant.name == crate::scenario::VariantName::Custom {
        // A custom variant's schema and statements are checked before any load.
        queue
            .install(&mut admin, plan.completion_audit)
            .await
            .map_err(|e| {
                variant_error(crate::queue::CustomError {
                    file: queue.variant().file("schema.sql"),
                    reason: format!("does not run: {}", crate::queue::one_line(&e)),
                })
            })?;
        queue
            .check_statements(&mut admin)
            .await
            .map_err(variant_error)?;
    } else {
        queue
            .install(&mut admin, plan.completion_audit)
            .await
            .context("creating the queue table")?;
    }
    if let Some(outbox) = plan.producers.outbox {
        queue
            .install_outbox(&mut admin, outbox.orders)
            .await
            .context("creating the outbox's orders")?;
    }
    let key_prefix = format!("r{:06x}", rand::random::<u32>() & 0xff_ffff);
    let factory = JobFactory::new(&plan.producers);

    let prefilled = prefill(
        plan,
        &queue,
        &factory,
        &mut admin,
        clock,
        &key_prefix,
        shutdown,
        opts.status,
    )
    .await?;
    queue
        .analyze(&mut admin)
        .await
        .context("ANALYZE of the queue table")?;
    let claim_plan_start = queue
        .explain_claim(&mut admin)
        .await
        .context("EXPLAIN of the claim")?;
    admin.close().await.ok();
    if shutdown.is_cancelled() {
        return Err(Failure::Interrupted);
    }
    Ok(Installed {
        queue,
        server_settings,
        key_prefix,
        factory,
        prefilled,
        claim_plan_start,
    })
}

/// The run's time line, fixed before the load starts: a window before the load, one per
/// phase, and the drain; each phase's producer schedule and faults.
struct Timeline {
    windows: Vec<PhaseWindow>,
    scheduled: Vec<ScheduledPhase>,
    phase_faults: Vec<PhaseFaults>,
    load_start_us: u64,
    load_start_wall: SystemTime,
    /// When the last phase ends, on the run clock.
    end_us: u64,
}

impl Timeline {
    fn of(plan: &Plan, clock: RunClock) -> Timeline {
        let load_start_us = clock.now_us() + LOAD_LEAD.as_micros() as u64;
        let load_start_wall = SystemTime::now() + LOAD_LEAD;
        let mut windows = vec![PhaseWindow::new(
            "prefill",
            WindowKind::Prefill,
            0,
            load_start_us,
            false,
        )];
        let mut scheduled = Vec::new();
        let mut phase_faults = Vec::new();
        let mut t = load_start_us;
        for p in &plan.phases {
            let end = t + p.duration.as_micros() as u64;
            windows.push(PhaseWindow::new(
                &p.name,
                WindowKind::Phase,
                t,
                end,
                p.measured,
            ));
            scheduled.push(ScheduledPhase {
                start_us: t,
                end_us: end,
                rate: p.rate,
            });
            phase_faults.push(PhaseFaults {
                phase: p.name.clone(),
                start_us: t,
                end_us: end,
                faults: p.faults.clone(),
            });
            t = end;
        }
        windows.push(PhaseWindow::new(
            "drain",
            WindowKind::Drain,
            t,
            u64::MAX,
            false,
        ));
        Timeline {
            windows,
            scheduled,
            phase_faults,
            load_start_us,
            load_start_wall,
            end_us: t,
        }
    }
}

/// Drain: the consumers finish what was committed, bounded by the timeout, while outcomes in
/// doubt are settled from the table. Returns how long it took and whether it timed out.
async fn drain(
    plan: &Plan,
    ctx: &FleetContext,
    live: &LiveStats,
    stop_load: &CancellationToken,
    shutdown: &CancellationToken,
) -> (f64, bool) {
    let clock = ctx.clock;
    let drain_start = clock.now_us();
    let mut last_settle = 0;
    while !stop_load.is_cancelled() && !live.drained() {
        let now = clock.now_us();
        if now - drain_start > plan.drain_timeout.as_micros() as u64 {
            return ((clock.now_us() - drain_start) as f64 / 1e6, true);
        }
        if now - last_settle > SETTLE_EVERY.as_micros() as u64 {
            last_settle = now;
            settle_in_doubt(ctx, live).await;
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(20)) => {}
            _ = shutdown.cancelled() => {}
        }
    }
    ((clock.now_us() - drain_start) as f64 / 1e6, false)
}

/// `--abort-on-fail`: after each phase (and a second's grace for its last jobs) judges the
/// thresholds that can be judged so far; the first failure stops the load. Returns it.
async fn watch_thresholds(
    thresholds: Vec<crate::scenario::Threshold>,
    windows: Vec<PhaseWindow>,
    clock: RunClock,
    requests: tokio::sync::mpsc::UnboundedSender<SnapshotRequest>,
    stop_load: CancellationToken,
) -> Option<String> {
    let phases: Vec<&PhaseWindow> = windows
        .iter()
        .filter(|w| w.kind == WindowKind::Phase)
        .collect();
    for (i, phase) in phases.iter().enumerate() {
        if !crate::fleet::sleep_or_stop(clock.until(phase.end_us + 1_000_000), &stop_load).await {
            return None;
        }
        let (reply, answer) = tokio::sync::oneshot::channel();
        requests.send(reply).ok()?;
        let snapshot = answer.await.ok()?;
        let ended: Vec<String> = phases[..=i].iter().map(|w| w.name.clone()).collect();
        let results = report::thresholds::judge_so_far(&thresholds, &snapshot, &ended);
        if let Some(failed) = results.iter().find(|r| !r.passed) {
            stop_load.cancel();
            let scope = failed
                .phase
                .as_deref()
                .map_or("the run so far".to_string(), |p| format!("phase {p}"));
            return Some(format!(
                "{} {} failed on {scope} (actual {})",
                failed.metric,
                failed.condition,
                failed.actual.map_or("n/a".into(), |a| format!("{a:.3}"))
            ));
        }
    }
    None
}

/// Asks the table about in-doubt outcomes the recorder listed, and reports what it says.
async fn settle_in_doubt(ctx: &FleetContext, live: &LiveStats) {
    let (keys, jobs) = live.unresolved();
    if keys.is_empty() && jobs.is_empty() {
        return;
    }
    let Ok(mut conn) = ctx.schema.connect_as("settle").await else {
        return;
    };
    if let Ok(events) = accounting::settle(
        &mut conn,
        &ctx.queue,
        &keys,
        &jobs,
        ctx.clock.now_us(),
        false,
    )
    .await
    {
        for e in events {
            ctx.emit(e);
        }
    }
    conn.close().await.ok();
}

/// Jobs bulk-inserted before the load, as `Enqueued` events for the recorder.
struct Prefilled {
    count: u64,
    events: Vec<Event>,
}

/// Bulk-inserts `producers.prefill` jobs before the load.
#[allow(clippy::too_many_arguments)]
async fn prefill(
    plan: &Plan,
    queue: &Queue,
    factory: &JobFactory,
    conn: &mut PgConnection,
    clock: RunClock,
    key_prefix: &str,
    shutdown: &CancellationToken,
    verbose: bool,
) -> Result<Prefilled> {
    let total = plan.producers.prefill as usize;
    if total > 0 && verbose {
        eprintln!("dbq-bench: prefilling {total} jobs…");
    }
    let mut rng: rand::rngs::StdRng = rand::SeedableRng::seed_from_u64(plan.seed ^ 0xF1F1);
    let mut events = Vec::with_capacity(total);
    while events.len() < total && !shutdown.is_cancelled() {
        let n = PREFILL_BATCH.min(total - events.len());
        let now = clock.now_us();
        let made: Vec<_> = (0..n)
            .map(|i| {
                factory.make(
                    &mut rng,
                    format!("{key_prefix}-f-{}", events.len() + i),
                    now,
                    None,
                )
            })
            .collect();
        let jobs: Vec<_> = made.iter().map(|m| m.job.clone()).collect();
        let ids = queue
            .enqueue_batch(conn, &jobs)
            .await
            .context("prefilling the queue")?;
        let committed_us = clock.now_us();
        for (id, m) in ids.into_iter().zip(&made) {
            events.push(Event::Enqueued {
                job: id,
                intended_us: now,
                sent_us: now,
                committed_us,
                open_loop: false,
                poison: m.poison,
                crash: m.crash,
            });
        }
    }
    Ok(Prefilled {
        count: events.len() as u64,
        events,
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
