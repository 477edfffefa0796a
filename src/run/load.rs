//! The load stage of one step: its time line, the fleets that run it (recorder, sampler,
//! consumers, reaper, producers, faults), and the drain that ends it. Fleets only emit
//! events; the recorder turns them into the step's measurements.

use super::RunOptions;
use crate::backend::Backend;
use crate::clock::RunClock;
use crate::faults::{self, FaultContext};
use crate::fleet::FleetContext;
use crate::fleet::registry::WorkerRegistry;
use crate::metrics::journal::{self, Journal};
use crate::metrics::{
    Event, LiveStats, Measurements, PhaseWindow, Recorder, SnapshotRequest, WindowKind,
};
use crate::progress::Progress;
use crate::provider::Server;
use crate::report::{self, GroupForming};
use crate::scenario::Plan;
use crate::status::Status;
use anyhow::Context;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

/// How far into the load the queue table is first analyzed when nothing was in it at
/// set-up: by then the load has put rows in it, and the workers' plans made since are made
/// again.
pub(super) const ANALYZE_AFTER: Duration = Duration::from_secs(1);
/// How often, after that, the harness looks whether the table has doubled since its last
/// ANALYZE.
const GROWTH_CHECK: Duration = Duration::from_secs(1);

use super::fleets::{
    start_bystander, start_chores, start_consumers, start_producers, start_sampler, stop_on_fatal,
};
use super::timeline::{LoadTarget, Timeline};

/// The fleets of one step, running.
pub(super) struct Load {
    ctx: FleetContext,
    live: Arc<LiveStats>,
    recorder: JoinHandle<Measurements>,
    sampler: JoinHandle<()>,
    sampler_stop: CancellationToken,
    consumers: JoinSet<()>,
    stop_consumers: CancellationToken,
    /// The reaper and the design's ticker, when there are.
    chores: Vec<JoinHandle<()>>,
    producers: JoinSet<()>,
    bystander: Option<JoinHandle<()>>,
    fault_tasks: JoinSet<()>,
    watcher: Option<JoinHandle<Option<String>>>,
    /// Cancelled by Ctrl-C, or by `--abort-on-fail`.
    stop_load: CancellationToken,
    progress: Progress,
    group_forming: Option<GroupForming>,
}

/// What a step's load leaves: its measurements and how its drain went.
pub(super) struct Ended {
    pub measurements: Measurements,
    pub drain_s: f64,
    pub drain_timed_out: bool,
    /// The load was stopped early (Ctrl-C or `--abort-on-fail`): the queue was not drained.
    pub stopped_early: bool,
    pub aborted_by_threshold: Option<String>,
    pub group_forming: Option<GroupForming>,
}

impl Load {
    /// Starts the consumers, waits for their group to form where they share the queue as
    /// one ([`super::forming`]), then fixes the step's time line from now and starts the
    /// recorder (holding `earlier_events`, e.g. the prefill, and what the consumers said
    /// meanwhile) and every other fleet.
    pub(super) async fn start(
        target: LoadTarget,
        plan: &Plan,
        opts: &RunOptions,
        earlier_events: Vec<Event>,
        shutdown: &CancellationToken,
    ) -> Load {
        let clock = target.clock;
        let (events, recorded) = tokio::sync::mpsc::unbounded_channel();
        for event in earlier_events {
            let _ = events.send(event);
        }
        let ctx = FleetContext {
            backend: target.backend.clone(),
            clock,
            events: events.into(),
        };
        let stop_consumers = CancellationToken::new();
        let registry = Arc::new(WorkerRegistry::new(plan.consumers.count));
        let consumers = start_consumers(plan, opts, &ctx, &registry, &stop_consumers);
        let group_forming =
            super::forming::await_ready(plan, &ctx, &registry, &opts.status, shutdown).await;
        let timeline = Timeline::of(plan, clock);
        announce(plan, &opts.status);
        let live = Arc::new(LiveStats::new());
        let journal = open_journal(&target, plan, &timeline, &opts.status);
        let (recorder, snapshot_requests) =
            start_recorder(plan, &timeline, clock, &live, recorded, journal);
        let (sampler, sampler_stop) = start_sampler(plan, &ctx, &timeline, target.server.as_ref());
        let mut chores = start_chores(plan, &ctx, &stop_consumers);
        if target.analyze {
            let at_us = timeline.load_start_us + ANALYZE_AFTER.as_micros() as u64;
            let (ctx, live, stop) = (ctx.clone(), live.clone(), stop_consumers.clone());
            chores.push(tokio::spawn(analyze_as_it_grows(ctx, live, at_us, stop)));
        }
        let stop_load = shutdown.child_token();
        // A permanent database error (reported by any fleet, in any process) stops the load.
        tokio::spawn(stop_on_fatal(live.clone(), stop_load.clone()));
        let watcher = (opts.abort_on_fail && !plan.thresholds.is_empty()).then(|| {
            let windows = timeline.windows.clone();
            let judge = (
                plan.thresholds.clone(),
                snapshot_requests,
                stop_load.clone(),
            );
            tokio::spawn(watch_thresholds(windows, clock, judge))
        });
        let producers = start_producers(plan, &target, &timeline, &ctx, &stop_load);
        let bystander = start_bystander(plan, &target, &timeline, &ctx, &stop_load);
        let fault_ctx = fault_context(plan, &ctx, (target.backend, target.server), registry);
        let fault_tasks = faults::spawn(&fault_ctx, &timeline.phase_faults, &stop_load);
        let progress = Progress::start(
            live.clone(),
            timeline.windows.clone(),
            clock,
            opts.progress_bar,
            opts.status.clone(),
        );
        Load {
            ctx,
            live,
            recorder,
            sampler,
            sampler_stop,
            consumers,
            stop_consumers,
            chores,
            producers,
            bystander,
            fault_tasks,
            watcher,
            stop_load,
            progress,
            group_forming,
        }
    }

    /// Waits for the phases to end, drains, stops every fleet and returns the measurements.
    pub(super) async fn finish(
        mut self,
        plan: &Plan,
        shutdown: &CancellationToken,
    ) -> anyhow::Result<Ended> {
        let say = |msg: String| self.progress.println(&msg);
        while self.producers.join_next().await.is_some() {}
        if let Some(b) = self.bystander.take() {
            b.await.ok();
        }
        while self.fault_tasks.join_next().await.is_some() {}
        let aborted_by_threshold = match self.watcher.take() {
            Some(w) => stopped(w).await.flatten(),
            None => None,
        };
        if let Some(t) = &aborted_by_threshold {
            say(format!("stopped early by --abort-on-fail: {t}"));
        }
        let clock = self.ctx.clock;
        self.ctx.emit(Event::ProducersStopped {
            at_us: clock.now_us(),
        });
        if !self.stop_load.is_cancelled() {
            say(format!(
                "load done; draining (timeout {})",
                humantime::format_duration(plan.drain_timeout)
            ));
        }
        let (drain_s, drain_timed_out) = super::drain::drain(
            plan.drain_timeout,
            &self.ctx,
            &self.live,
            &self.stop_load,
            shutdown,
        )
        .await;
        if drain_timed_out {
            say(format!(
                "the drain timed out after {drain_s:.1} s with {} job(s) unfinished",
                self.live.snapshot().outstanding
            ));
        }
        self.stop_consumers.cancel();
        while self.consumers.join_next().await.is_some() {}
        for chore in self.chores {
            chore.await.ok();
        }
        self.sampler_stop.cancel();
        self.sampler.await.ok();
        probe_after_drain(&self.ctx).await;
        drop(self.ctx);
        let measurements = self
            .recorder
            .await
            .context("the recorder stopped unexpectedly")?;
        self.progress.finish().await;
        Ok(Ended {
            measurements,
            drain_s,
            drain_timed_out,
            stopped_early: self.stop_load.is_cancelled(),
            aborted_by_threshold,
            group_forming: self.group_forming,
        })
    }
}

/// What a task it aborted had returned, if it had finished.
async fn stopped<T>(task: JoinHandle<T>) -> Option<T> {
    task.abort();
    task.await.ok()
}

/// The claim's cost once the queue is drained, where the engine has a planner; on a new
/// connection, since the load's faults may have broken older ones.
async fn probe_after_drain(ctx: &FleetContext) {
    let Ok(mut admin) = ctx.backend.connect("main").await else {
        return;
    };
    let probed = match admin.planner() {
        Some(planner) => planner.probe_claim().await.ok(),
        None => None,
    };
    if let Some(probe) = probed {
        ctx.emit(Event::ClaimProbe {
            at_us: ctx.clock.now_us(),
            label: "after the drain".into(),
            probe,
        });
    }
    admin.close().await;
}

/// ANALYZEs of the queue table during the load, on a connection of their own: the first at
/// `at_us`, once the load has put rows in it (the statements the workers prepared on a
/// table never analyzed are planned again on statistics of a table with rows), then each
/// time the jobs enqueued have doubled since the last one. Autoanalyze keeps a table in
/// service within about 10% of its statistics (after its next naptime); a plan made for the
/// few hundred rows of the first second is not kept while the table grows to thousands.
async fn analyze_as_it_grows(
    ctx: FleetContext,
    live: Arc<LiveStats>,
    at_us: u64,
    stop: CancellationToken,
) {
    if !crate::fleet::sleep_or_stop(ctx.clock.until(at_us), &stop).await {
        return;
    }
    let mut analyzed_rows = 0;
    loop {
        let rows = live.snapshot().enqueued;
        if rows > 0 && rows >= 2 * analyzed_rows {
            analyze_now(&ctx, rows).await;
            analyzed_rows = rows;
        }
        if !crate::fleet::sleep_or_stop(GROWTH_CHECK, &stop).await {
            return;
        }
    }
}

/// One ANALYZE of the queue table, `rows` jobs having been enqueued.
async fn analyze_now(ctx: &FleetContext, rows: u64) {
    let started = ctx.clock.now_us();
    let result = match ctx.backend.connect("statistics").await {
        Ok(mut conn) => {
            let analyzed = match conn.planner() {
                Some(planner) => planner.analyze().await,
                None => Ok(()),
            };
            conn.close().await;
            analyzed
        }
        Err(e) => Err(e),
    };
    ctx.emit(Event::Analyzed {
        at_us: started,
        took_us: ctx.clock.now_us().saturating_sub(started),
        rows,
        error: result.err().map(|e| e.to_string()),
    });
}

/// The recorder of what was sent on `recorded`; where requests for the figures so far
/// are sent.
fn start_recorder(
    plan: &Plan,
    timeline: &Timeline,
    clock: RunClock,
    live: &Arc<LiveStats>,
    recorded: UnboundedReceiver<Event>,
    journal: Journal,
) -> (JoinHandle<Measurements>, UnboundedSender<SnapshotRequest>) {
    let recorder = Recorder::new(
        timeline.windows.clone(),
        timeline.load_start_us,
        plan.producers.late_after,
        live.clone(),
    );
    let (snapshot_requests, snapshots) = tokio::sync::mpsc::unbounded_channel();
    let wall = timeline.load_start_wall;
    let handle = tokio::spawn(recorder.run(recorded, snapshots, clock, wall, journal));
    (handle, snapshot_requests)
}

/// Says that the load starts: its phases and how long they last together.
fn announce(plan: &Plan, status: &Status) {
    let seconds: f64 = plan.phases.iter().map(|p| p.duration.as_secs_f64()).sum();
    status.line(&format!(
        "load started: {} phase(s), {seconds:.0} s",
        plan.phases.len()
    ));
}

/// What the fault drivers act on: the queue, its server, the workers' registry.
fn fault_context(
    plan: &Plan,
    ctx: &FleetContext,
    (backend, server): (Arc<dyn Backend>, Option<Arc<Server>>),
    registry: Arc<WorkerRegistry>,
) -> FaultContext {
    FaultContext {
        clock: ctx.clock,
        events: ctx.events.clone(),
        backend,
        engine: plan.database.engine,
        registry,
        server,
        startup_timeout: plan.database.startup_timeout,
        seed: plan.seed,
        claim_mode: (plan.queue.variant.workers.is_none()).then_some(plan.consumers.claim_mode),
    }
}

/// The step's journal ([`crate::metrics::journal`]) beside the scenario as resolved (what
/// `prove` reads back), where its queue can be reached again by another process (not the
/// in-memory queue); a journal that cannot be made is said once and the step runs without.
fn open_journal(target: &LoadTarget, plan: &Plan, timeline: &Timeline, status: &Status) -> Journal {
    let Some(at) = target.backend.attachment() else {
        return Journal::off();
    };
    let header = journal::Header {
        journal: 1,
        engine: at.engine,
        url: crate::redact::redact_url(&at.url),
        namespace: at.namespace,
        windows: timeline.windows.clone(),
        load_start_us: timeline.load_start_us,
        started: crate::leftovers::describe(),
    };
    let dir = &target.out_dir;
    let made = std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(dir.join(report::RESOLVED_SCENARIO), plan.resolved_toml()))
        .and_then(|()| Journal::create(dir, &header));
    made.unwrap_or_else(|e| {
        status.warn(&format!(
            "no journal in {}: {e} (a harness that dies mid-run leaves nothing to prove)",
            target.out_dir.display()
        ));
        Journal::off()
    })
}

/// `--abort-on-fail`: after each phase (and a second's grace for its last jobs) judges the
/// thresholds that can be judged so far; the first failure stops the load. Returns it.
/// How long after a phase's end `--abort-on-fail` judges it: its last jobs may finish.
const JUDGED_AFTER: Duration = Duration::from_secs(1);

async fn watch_thresholds(
    windows: Vec<PhaseWindow>,
    clock: RunClock,
    (thresholds, requests, stop_load): (
        Vec<crate::thresholds::Threshold>,
        tokio::sync::mpsc::UnboundedSender<SnapshotRequest>,
        CancellationToken,
    ),
) -> Option<String> {
    let phases: Vec<&PhaseWindow> = windows
        .iter()
        .filter(|w| w.kind == WindowKind::Phase)
        .collect();
    for (i, phase) in phases.iter().enumerate() {
        let judged_at = phase.end_us + JUDGED_AFTER.as_micros() as u64;
        if !crate::fleet::sleep_or_stop(clock.until(judged_at), &stop_load).await {
            return None;
        }
        let (reply, answer) = tokio::sync::oneshot::channel();
        requests.send(reply).ok()?;
        let snapshot = answer.await.ok()?;
        let ended: Vec<String> = phases[..=i].iter().map(|w| w.name.clone()).collect();
        let results =
            report::thresholds::judge_so_far(&thresholds, &snapshot, &ended, JUDGED_AFTER);
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
