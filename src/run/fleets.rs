//! The fleets of one step's load, each started on its own: producers, the bystander, the
//! reaper and the ticker, the sampler and the harness's monitor, the consumers (tasks,
//! worker processes or a library's own).

use super::RunOptions;
use super::timeline::{LoadTarget, Timeline};
use crate::backend::ExternalWorkers;
use crate::fleet::bystander::Bystander;
use crate::fleet::external::{self, ExternalFleet};
use crate::fleet::jobs::JobFactory;
use crate::fleet::pacer::ProducerFleet;
use crate::fleet::process::{self, WorkerConfig};
use crate::fleet::producer::ProducerShared;
use crate::fleet::reaper::{DesignTicker, StaleJobReaper};
use crate::fleet::registry::WorkerRegistry;
use crate::fleet::{FleetContext, consumer};
use crate::metrics::{DbSampler, HarnessMonitor, LiveStats, WindowKind};
use crate::provider::Server;
use crate::scenario::Plan;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

/// The producers of the step, on its schedule.
pub(super) fn start_producers(
    plan: &Plan,
    target: &LoadTarget,
    timeline: &Timeline,
    ctx: &FleetContext,
    stop: &CancellationToken,
) -> JoinSet<()> {
    ProducerFleet {
        count: plan.producers.count,
        max_count: plan.producers.max_count,
        arrival: plan.producers.arrival,
        phases: timeline.scheduled.clone(),
        shared: ProducerShared {
            factory: JobFactory::new(&plan.producers),
            seed: plan.seed ^ target.step as u64,
            key_prefix: target.key_prefix.clone(),
            outbox_rollback_rate: plan.producers.outbox.map(|o| o.rollback_rate),
            sequence: Default::default(),
        },
    }
    .spawn(ctx, stop)
}

/// The bystander, when the plan has one: from the start of the load to the end of its last
/// phase (or until the load stops).
pub(super) fn start_bystander(
    plan: &Plan,
    target: &LoadTarget,
    timeline: &Timeline,
    ctx: &FleetContext,
    stop: &CancellationToken,
) -> Option<JoinHandle<()>> {
    let bystander = Bystander {
        plan: plan.bystander?,
        seed: plan.seed ^ 0xb1 ^ target.step as u64,
    };
    let end_us = timeline
        .windows
        .iter()
        .filter(|w| w.kind == WindowKind::Phase)
        .map(|w| w.end_us)
        .max()?;
    let span = (timeline.load_start_us, end_us);
    Some(tokio::spawn(bystander.run(ctx.clone(), span, stop.clone())))
}

/// The stale-job reaper, when the plan has one, and the design's ticker, when it has one;
/// they stop with the consumers.
pub(super) fn start_chores(
    plan: &Plan,
    ctx: &FleetContext,
    stop: &CancellationToken,
) -> Vec<JoinHandle<()>> {
    // A library's own workers rescue their jobs themselves.
    let harness_workers = plan.queue.variant.workers.is_none();
    let reaper = plan.reaper.filter(|_| harness_workers).map(|r| {
        let reaper = StaleJobReaper {
            interval: r.interval,
            stale_after: r.stale_after,
            count_as_attempt: r.count_as_attempt,
        };
        tokio::spawn(reaper.run(ctx.clone(), stop.clone()))
    });
    let ticker = ctx
        .backend
        .design()
        .ticks
        .map(|every| tokio::spawn(DesignTicker { every }.run(ctx.clone(), stop.clone())));
    reaper.into_iter().chain(ticker).collect()
}

/// Cancels `stop_load` as soon as a permanent error is reported.
pub(super) async fn stop_on_fatal(live: Arc<LiveStats>, stop_load: CancellationToken) {
    while live.fatal().is_none() {
        if !crate::fleet::sleep_or_stop(Duration::from_millis(50), &stop_load).await {
            return;
        }
    }
    stop_load.cancel();
}

/// The database sampler, with a claim probe at the start of each phase and at the end, and
/// the harness's monitor of itself.
pub(super) fn start_sampler(
    plan: &Plan,
    ctx: &FleetContext,
    timeline: &Timeline,
    server: Option<&Arc<Server>>,
) -> (JoinHandle<()>, CancellationToken) {
    let mut probes: Vec<(u64, String)> = timeline
        .windows
        .iter()
        .filter(|w| w.kind == WindowKind::Phase)
        .map(|w| (w.start_us, format!("start of {}", w.name)))
        .collect();
    probes.push((timeline.end_us, "end of the last phase".into()));
    let sampler = DbSampler {
        backend: ctx.backend.clone(),
        clock: ctx.clock,
        events: ctx.events.clone(),
        interval: plan.sampler_interval,
        probes,
    };
    let stop = CancellationToken::new();
    let monitor = HarnessMonitor {
        clock: ctx.clock,
        events: ctx.events.clone(),
        late_after: plan.producers.late_after,
        server: server.filter(|s| s.is_owned()).map(|s| {
            let s = s.clone();
            Arc::new(move || s.process_id()) as crate::metrics::monitor::ServerPid
        }),
    };
    let monitor = tokio::spawn(monitor.run(stop.clone()));
    let sampler = tokio::spawn(sampler.run(stop.clone()));
    let both = tokio::spawn(async move {
        sampler.await.ok();
        monitor.await.ok();
    });
    (both, stop)
}

/// Consumers as tasks of this process, as worker processes, or as a library's own worker
/// processes.
pub(super) fn start_consumers(
    plan: &Plan,
    opts: &RunOptions,
    ctx: &FleetContext,
    registry: &Arc<WorkerRegistry>,
    stop: &CancellationToken,
) -> JoinSet<()> {
    if let Some(workers) = &plan.queue.variant.workers {
        return external::spawn(&library_fleet(plan, workers, ctx), ctx, registry, stop);
    }
    // A queue that only this process can reach (the in-memory one) is worked by tasks.
    let queue_at = ctx
        .backend
        .attachment()
        .filter(|_| plan.consumers.processes);
    let Some(queue_at) = queue_at else {
        return consumer::spawn_tasks(&plan.consumers, plan.seed, ctx, registry, stop);
    };
    let config = WorkerConfig {
        slot: 0,
        queue_at,
        clock_epoch_ns: ctx.clock.epoch_ns(),
        seed: plan.seed,
        consumers: plan.consumers.clone(),
        queue: plan.queue.clone(),
    };
    let exe = opts
        .worker_exe
        .clone()
        .or_else(|| std::env::current_exe().ok())
        .unwrap_or_else(|| "dbq-bench".into());
    process::spawn_processes(&exe, &config, ctx, registry, stop)
}

/// A library's worker processes: the run's server in libpq's variables, and the scenario's
/// settings the glue passes on to the library.
pub(super) fn library_fleet(
    plan: &Plan,
    workers: &ExternalWorkers,
    ctx: &FleetContext,
) -> ExternalFleet {
    let c = &plan.consumers;
    let mut env = ctx.backend.client_env();
    env.extend([
        (
            "DBQ_BENCH_CONCURRENCY".into(),
            workers.concurrency.to_string(),
        ),
        (
            "DBQ_BENCH_MAX_RETRIES".into(),
            plan.queue.max_retries.to_string(),
        ),
        (
            "DBQ_BENCH_POLL_INTERVAL_S".into(),
            c.poll_interval.as_secs_f64().to_string(),
        ),
    ]);
    if let Some(r) = plan.reaper {
        env.push((
            "DBQ_BENCH_STALE_AFTER_S".into(),
            r.stale_after.as_secs_f64().to_string(),
        ));
    }
    ExternalFleet {
        workers: workers.clone(),
        env,
        handler: c.handler,
        seed: plan.seed,
        restart_after: c.restart_after,
    }
}
