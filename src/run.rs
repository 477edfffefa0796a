//! One run, start to finish: provision → schema → prefill → phases → drain → proof →
//! results → teardown. This is the only module that knows the order of the stages; each
//! stage lives in its own module.

use crate::accounting;
use crate::clock::RunClock;
use crate::db::{self, RunSchema, Server};
use crate::error::Failure;
use crate::fleet::FleetContext;
use crate::fleet::consumer::ConsumerFleet;
use crate::fleet::handler::SimulatedHandler;
use crate::fleet::jobs::JobFactory;
use crate::fleet::producer::{ProducerFleet, ScheduledPhase};
use crate::fleet::reaper::StaleJobReaper;
use crate::metrics::{
    Event, JobId, Ledger, LiveStats, PhaseWindow, QueueDepthSampler, Recorder, WindowKind,
};
use crate::progress::Progress;
use crate::queue::{NewJob, Queue};
use crate::report::{self, RunFacts, RunResults, Summary};
use crate::scenario::Plan;
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
}

/// What a finished (or interrupted) run leaves behind.
pub struct RunOutcome {
    pub results: RunResults,
    pub out_dir: PathBuf,
    /// The harness's ledger, for re-checking the table afterwards.
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
    let server = db::provision(&plan.database).await?;
    if opts.status {
        let version: Vec<&str> = server.version.split_whitespace().take(2).collect();
        eprintln!("dbq-bench: {} — {}", server.description, version.join(" "));
    }
    let outcome = if shutdown.is_cancelled() {
        Err(Failure::Interrupted)
    } else {
        run_on_server(plan, opts, &server, clock, started_at, &shutdown).await
    };
    let kept_server = if opts.keep && server.is_owned() {
        Some(server.leak())
    } else {
        if let Err(e) = server.teardown().await {
            eprintln!("dbq-bench: warning: teardown: {e:#}");
        }
        None
    };
    outcome.map(|mut o| {
        o.kept_server = kept_server;
        o
    })
}

async fn run_on_server(
    plan: &Plan,
    opts: &RunOptions,
    server: &Server,
    clock: RunClock,
    started_at: String,
    shutdown: &CancellationToken,
) -> Result<RunOutcome, Failure> {
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

#[allow(clippy::too_many_arguments)]
async fn run_in_schema(
    plan: &Plan,
    opts: &RunOptions,
    server: &Server,
    schema: &RunSchema,
    clock: RunClock,
    started_at: String,
    shutdown: &CancellationToken,
) -> Result<RunOutcome, Failure> {
    let queue = Queue::new(&plan.queue);
    let mut admin = schema.connect().await?;
    queue
        .install(&mut admin, plan.completion_audit)
        .await
        .context("creating the queue table")?;
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
        .context("ANALYZE job_queue")?;
    let claim_plan_start = queue
        .explain_claim(&mut admin)
        .await
        .context("EXPLAIN of the claim")?;
    if shutdown.is_cancelled() {
        return Err(Failure::Interrupted);
    }

    // The timeline: a window before the load, one per phase, and the drain.
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
        t = end;
    }
    windows.push(PhaseWindow::new(
        "drain",
        WindowKind::Drain,
        t,
        u64::MAX,
        false,
    ));

    let live = Arc::new(LiveStats::new());
    let (events, rx) = tokio::sync::mpsc::unbounded_channel();
    let recorder = Recorder::new(
        windows.clone(),
        load_start_us,
        plan.producers.late_after,
        &prefilled,
        live.clone(),
    );
    let recorder = tokio::spawn(recorder.run(rx, clock, load_start_wall));
    let ctx = FleetContext {
        queue,
        schema: schema.clone(),
        clock,
        events,
    };

    let sampler_stop = CancellationToken::new();
    let sampler = QueueDepthSampler {
        queue,
        clock,
        events: ctx.events.clone(),
        interval: Duration::from_secs(1),
    };
    let sampler = tokio::spawn(sampler.run(schema.connect().await?, sampler_stop.clone()));

    let stop_consumers = CancellationToken::new();
    let reaper = plan.reaper.map(|r| {
        let reaper = StaleJobReaper {
            interval: r.interval,
            stale_after: r.stale_after,
        };
        tokio::spawn(reaper.run(ctx.clone(), stop_consumers.clone()))
    });
    let mut consumers = ConsumerFleet {
        count: plan.consumers.count,
        poll_interval: plan.consumers.poll_interval,
        handler: SimulatedHandler::new(plan.consumers.handler),
        seed: plan.seed,
    }
    .spawn(&ctx, &stop_consumers);
    let stop_producers = shutdown.child_token();
    let mut producers = ProducerFleet {
        count: plan.producers.count,
        arrival: plan.producers.arrival,
        factory,
        phases: scheduled,
        seed: plan.seed,
        key_prefix,
    }
    .spawn(&ctx, &stop_producers);
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
    ctx.emit(Event::ProducersStopped {
        at_us: clock.now_us(),
    });

    // Drain: consumers finish what was committed, bounded by the timeout.
    if !shutdown.is_cancelled() {
        say(format!(
            "dbq-bench: load done; draining (timeout {})",
            humantime::format_duration(plan.drain_timeout)
        ));
    }
    let drain_start = clock.now_us();
    let mut drain_timed_out = false;
    while !shutdown.is_cancelled() && !live.drained() {
        if clock.now_us() - drain_start > plan.drain_timeout.as_micros() as u64 {
            drain_timed_out = true;
            break;
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(20)) => {}
            _ = shutdown.cancelled() => {}
        }
    }
    let drain_s = (clock.now_us() - drain_start) as f64 / 1e6;
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
    if let Ok(conn) = sampler.await {
        conn.close().await.ok();
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
    let drained = !shutdown.is_cancelled() && !drain_timed_out;
    let proof = accounting::prove(
        &mut admin,
        &queue,
        &measurements.ledger,
        plan.completion_audit,
        drained,
    )
    .await?;
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
        prefilled: prefilled.len() as u64,
        variant: queue.variant().into(),
        claim_sql: queue.claim_sql().trim().into(),
        claim_plan_start,
        claim_plan_end,
    };
    let summary = Summary::build(plan, &measurements, proof, facts);
    let results = RunResults {
        summary,
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
        ledger: measurements.ledger,
        kept_schema: None,
        kept_server: None,
    })
}

/// Bulk-inserts `producers.prefill` jobs before the load; returns their ids.
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
) -> Result<Vec<JobId>> {
    let total = plan.producers.prefill as usize;
    if total > 0 && verbose {
        eprintln!("dbq-bench: prefilling {total} jobs…");
    }
    let mut rng: rand::rngs::StdRng = rand::SeedableRng::seed_from_u64(plan.seed ^ 0xF1F1);
    let mut ids = Vec::with_capacity(total);
    while ids.len() < total && !shutdown.is_cancelled() {
        let n = PREFILL_BATCH.min(total - ids.len());
        let now = clock.now_us();
        let jobs: Vec<NewJob> = (0..n)
            .map(|i| factory.make(&mut rng, &format!("{key_prefix}-f-{}", ids.len() + i), now))
            .collect();
        ids.extend(
            queue
                .enqueue_batch(conn, &jobs)
                .await
                .context("prefilling the queue")?,
        );
    }
    Ok(ids)
}

fn utc_now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

fn default_out_dir(name: &str) -> PathBuf {
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
