//! Worker processes (`consumers.processes = true`): each consumer slot is a child process
//! (`dbq-bench worker`, hidden) running one [`Worker`], so that it can be SIGKILLed or
//! SIGSTOPped like a real worker. The child writes its events as JSON lines on stdout,
//! each written before the worker goes on (a claim is in the pipe before the job is run
//! and acknowledged, so a kill cannot hide a job it held), and the supervisor in the runner forwards them to the recorder; it
//! also tracks which job each child holds, so that when a child dies the job is reported as
//! in doubt. A child exits when its stdin closes (the runner is gone) or on SIGTERM.

use super::consumer::{CrashAction, Worker};
use super::registry::WorkerRegistry;
use super::{FleetContext, WakeUps, sleep_or_stop};
use crate::backend::{self, Attachment};
use crate::clock::RunClock;
use crate::metrics::{Event, EventSink, JobId};
use crate::scenario::{ConsumerPlan, QueuePlan};
use anyhow::{Context, Result};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Environment variable carrying a child's [`WorkerConfig`] as JSON.
pub const CONFIG_VAR: &str = "DBQ_BENCH_WORKER";

/// Everything a worker process needs, passed from the runner.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerConfig {
    pub slot: u32,
    /// Where the queue is (its URL carries the password: never shown).
    pub queue_at: Attachment,
    /// The runner's run-clock epoch, so the child's timestamps share its time base.
    pub clock_epoch_ns: u64,
    pub seed: u64,
    pub consumers: ConsumerPlan,
    pub queue: QueuePlan,
}

/// One supervisor task per slot: starts the slot's process, forwards its events, restarts
/// it `restart_after` after it dies, and stops it (SIGTERM) when `stop` is cancelled.
/// `exe` is the `dbq-bench` executable to run them with.
pub fn spawn_processes(
    exe: &Path,
    config: &WorkerConfig,
    ctx: &FleetContext,
    registry: &Arc<WorkerRegistry>,
    stop: &CancellationToken,
) -> JoinSet<()> {
    let mut set = JoinSet::new();
    for slot in 0..registry.len() as u32 {
        let config = WorkerConfig {
            slot,
            ..config.clone()
        };
        set.spawn(supervise(
            exe.to_path_buf(),
            config,
            ctx.clone(),
            registry.clone(),
            stop.clone(),
        ));
    }
    set
}

async fn supervise(
    exe: PathBuf,
    config: WorkerConfig,
    ctx: FleetContext,
    registry: Arc<WorkerRegistry>,
    stop: CancellationToken,
) {
    let slot = config.slot;
    let json = serde_json::to_string(&config).expect("worker config serializes");
    while !stop.is_cancelled() {
        let spawned = tokio::process::Command::new(&exe)
            .arg("worker")
            .env(CONFIG_VAR, &json)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            // Its own process group: a Ctrl-C at the terminal reaches the runner only, which
            // then stops its workers in order.
            .process_group(0)
            .spawn();
        let child = match spawned {
            Ok(c) => c,
            Err(e) => {
                ctx.emit(Event::WorkerError {
                    at_us: ctx.clock.now_us(),
                    error: format!("cannot start a worker process: {e}"),
                    jobs: Vec::new(),
                    in_doubt: false,
                });
                sleep_or_stop(config.consumers.restart_after, &stop).await;
                continue;
            }
        };
        match watch(child, slot, &ctx, &registry, &stop).await {
            Ended::Stopped => break,
            Ended::Died { cause, jobs } => ctx.emit(Event::WorkerCrashed {
                at_us: ctx.clock.now_us(),
                slot,
                jobs,
                reported: Vec::new(),
                cause,
            }),
        }
        sleep_or_stop(config.consumers.restart_after, &stop).await;
    }
}

/// How a worker process ended.
enum Ended {
    /// Asked to stop, it exited cleanly.
    Stopped,
    /// It died (or exited on its own) holding `jobs`.
    Died { cause: String, jobs: Vec<JobId> },
}

/// Forwards a running child's events until it ends; stops it when `stop` is cancelled.
async fn watch(
    mut child: tokio::process::Child,
    slot: u32,
    ctx: &FleetContext,
    registry: &WorkerRegistry,
    stop: &CancellationToken,
) -> Ended {
    let pid = child.id().unwrap_or(0) as i32;
    registry.set_pid(slot, pid);
    // Held open while the child runs: it exits when this closes.
    let _stdin = child.stdin.take();
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let mut stderr = child.stderr.take().expect("piped");
    let mut in_flight: Vec<JobId> = Vec::new();
    let mut stopping = false;
    // It reported an error that retrying cannot help (and stops the run): it then exits.
    let mut gave_up = false;
    loop {
        tokio::select! {
            line = lines.next_line() => match line {
                Ok(Some(line)) => match serde_json::from_str::<Event>(&line) {
                    Ok(event) => {
                        gave_up |= matches!(event, Event::Fatal { .. });
                        track(&mut in_flight, &event);
                        registry.set_in_flight(slot, in_flight.first().copied());
                        ctx.emit(event);
                    }
                    Err(e) => tracing::debug!("worker {slot}: unreadable event line ({e}): {line}"),
                },
                _ => break,
            },
            _ = stop.cancelled(), if !stopping => {
                stopping = true;
                // A frozen child must run again to see the SIGTERM.
                let _ = kill(Pid::from_raw(pid), Signal::SIGCONT);
                let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
            }
        }
    }
    let status = child.wait().await;
    registry.set_pid(slot, 0);
    registry.set_in_flight(slot, None);
    // A clean exit is a stop, not a death, when it was asked for (the run's stop may
    // have come just as the child ended) or followed its own permanent error.
    let asked = stopping || stop.is_cancelled() || gave_up;
    if asked && status.as_ref().is_ok_and(|s| s.success()) {
        return Ended::Stopped;
    }
    let mut err_text = String::new();
    let _ = stderr.read_to_string(&mut err_text).await;
    let cause = super::exit_cause(status);
    let tail = err_text
        .lines()
        .last()
        .map(|l| format!(" ({l})"))
        .unwrap_or_default();
    Ended::Died {
        cause: format!("{cause}{tail}"),
        jobs: in_flight,
    }
}

/// Which jobs a worker holds (one, or a claimed batch), from the events it sends.
fn track(in_flight: &mut Vec<JobId>, event: &Event) {
    match event {
        Event::Claimed { job, .. } => in_flight.push(*job),
        Event::Completed { job, .. } | Event::Failed { job, .. } | Event::Stale { job, .. } => {
            in_flight.retain(|j| j != job)
        }
        Event::WorkerError { .. } | Event::WorkerCrashed { .. } => in_flight.clear(),
        _ => {}
    }
}

/// The child's side: `dbq-bench worker`. Reads its configuration from the environment, runs
/// one worker, writes events to stdout. Returns when stopped.
pub async fn worker_main() -> Result<()> {
    let json = std::env::var(CONFIG_VAR).with_context(|| {
        format!("{CONFIG_VAR} is not set: `worker` is started by `dbq-bench run`")
    })?;
    let config: WorkerConfig =
        serde_json::from_str(&json).context("reading the worker configuration")?;
    let ctx = FleetContext {
        backend: backend::attach(&config.queue_at, &config.queue)
            .context("reaching the run's queue")?,
        clock: RunClock::from_epoch(config.clock_epoch_ns),
        events: EventSink::Lines(Arc::new(std::sync::Mutex::new(std::io::stdout()))),
    };
    let stop = CancellationToken::new();

    // Stop on SIGTERM, and when the runner goes away (stdin closes).
    let on_signal = stop.clone();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::spawn(async move {
        term.recv().await;
        on_signal.cancel();
    });
    let on_eof = stop.clone();
    tokio::spawn(async move {
        let mut buf = [0u8; 64];
        let mut stdin = tokio::io::stdin();
        while matches!(stdin.read(&mut buf).await, Ok(n) if n > 0) {}
        on_eof.cancel();
    });
    let registry = Arc::new(WorkerRegistry::new(config.slot as usize + 1));
    let wake_ups = WakeUps::start(&ctx, &stop);
    let worker = Worker::new(
        &config.consumers,
        config.seed,
        config.slot,
        ctx,
        registry,
        wake_ups,
        CrashAction::KillProcess,
    );
    worker.run(stop).await;
    Ok(())
}
