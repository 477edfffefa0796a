//! Consumers: the seed's worker, in either claim mode.
//!
//! - `in_transaction` (the seed): one transaction per job that claims (`FOR UPDATE SKIP
//!   LOCKED`), runs the handler while holding the row lock, and commits `done` or the failure
//!   update. A crash rolls the claim back by itself.
//! - `committed`: the claim commits `processing` first, the handler runs outside any
//!   transaction, and `done` or the failure update commits separately. A crashed worker's
//!   job stays `processing` until the reaper returns it.
//!
//! A claim takes one job, or a batch when the variant claims in batches: the handler runs
//! per job, then the batch's completions commit together (one statement per job, or one for
//! the batch, as the variant says). A worker runs as a task of the runner, or alone in a child
//! process (`consumers.processes`, see `process`). An empty claim waits `poll_interval`, or
//! until an enqueue announces a job (`notify` variants).

use super::handler::SimulatedHandler;
use super::registry::WorkerRegistry;
use super::{FleetContext, WakeUps, sleep_or_stop};
use crate::backend::{BackendError, ClaimedJob, FailOutcome, Handout, Link};
use crate::metrics::{Event, JobId};
use crate::scenario::{ClaimMode, ConsumerPlan, CrashPoint};
use rand::SeedableRng;
use rand::rngs::StdRng;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Message written to `error_msg` by a simulated failure.
pub const SIMULATED_FAILURE: &str = "simulated handler failure";

/// What a worker does when it crashes.
#[derive(Debug, Clone, Copy)]
pub enum CrashAction {
    /// A task: report the crash, stay down `restart_after`, then start over.
    RestartTask(Duration),
    /// A worker process: SIGKILL itself; its supervisor reports and restarts it.
    KillProcess,
}

/// Deterministic per-worker random seed.
pub fn worker_seed(seed: u64, slot: u32) -> u64 {
    seed.rotate_left(17) ^ 0xD1B5_4A32_D192_ED03u64.wrapping_mul(slot as u64 + 1)
}

/// Task workers, one per slot of the registry, shared out over one thread per core, each
/// thread with a single-threaded runtime of its own (as pgbench shares its clients over
/// `-j` threads). A worker's connection, its wake-ups and its task then stay on one thread:
/// on a work-stealing runtime each reply could wake a parked thread to run the worker, and
/// those thread switches cost more CPU per job than the worker itself. These runtimes drive
/// sockets and timers only: no signal or child-process driver to poll at every park. With
/// `TOKIO_WORKER_THREADS` set, the workers share the process's runtime of that many threads
/// instead, with everything else the harness runs (a way to hold the harness to fewer
/// threads). The returned set ends when every worker has.
pub fn spawn_tasks(
    plan: &ConsumerPlan,
    seed: u64,
    ctx: &FleetContext,
    registry: &Arc<WorkerRegistry>,
    stop: &CancellationToken,
) -> JoinSet<()> {
    let wake_ups = WakeUps::start(ctx, stop);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(registry.len().max(1));
    let on_shared_runtime = std::env::var_os("TOKIO_WORKER_THREADS").is_some();
    let mut shares: Vec<Vec<Worker>> = (0..threads).map(|_| Vec::new()).collect();
    for slot in 0..registry.len() as u32 {
        shares[slot as usize % threads].push(Worker::new(
            plan,
            seed,
            slot,
            ctx.clone(),
            registry.clone(),
            wake_ups.clone(),
            CrashAction::RestartTask(plan.restart_after),
        ));
    }
    let mut set = JoinSet::new();
    if on_shared_runtime {
        for worker in shares.into_iter().flatten() {
            set.spawn(worker.run(stop.clone()));
        }
        return set;
    }
    for (i, workers) in shares.into_iter().enumerate() {
        // Handed to the thread; taken back to run on the shared runtime if it cannot start.
        let handed = Arc::new(std::sync::Mutex::new(Some(workers)));
        let (done, finished) = tokio::sync::oneshot::channel::<()>();
        let (stop_, handed_) = (stop.clone(), handed.clone());
        let started = std::thread::Builder::new()
            .name(format!("workers-{i}"))
            .spawn(move || {
                let workers = handed_.lock().ok().and_then(|mut w| w.take());
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_io()
                    .enable_time()
                    .build();
                if let (Some(workers), Ok(runtime)) = (workers, runtime) {
                    runtime.block_on(async {
                        let mut tasks = JoinSet::new();
                        for worker in workers {
                            tasks.spawn(worker.run(stop_.clone()));
                        }
                        while tasks.join_next().await.is_some() {}
                    });
                }
                drop(done);
            });
        match started {
            Ok(_) => {
                set.spawn(async move {
                    let _ = finished.await;
                });
            }
            Err(e) => {
                tracing::warn!("no thread for workers ({e}): they run on the shared runtime");
                let workers = handed.lock().ok().and_then(|mut w| w.take());
                for worker in workers.into_iter().flatten() {
                    set.spawn(worker.run(stop.clone()));
                }
            }
        }
    }
    set
}

enum Step {
    Worked,
    Empty,
    /// The worker died holding these jobs.
    Crashed(Vec<JobId>),
}

/// A database error in a step, with the jobs it concerned and whether their last change
/// may have committed after all.
struct StepError {
    error: BackendError,
    jobs: Vec<JobId>,
    in_doubt: bool,
}

fn at(jobs: &[JobId], committing: bool) -> impl Fn(BackendError) -> StepError {
    move |error| {
        let in_doubt = committing && error.outcome_unknown();
        StepError {
            error,
            jobs: jobs.to_vec(),
            in_doubt,
        }
    }
}

/// A job whose handler ran: how long, and whether it failed.
struct Handled<'a> {
    job: &'a ClaimedJob,
    handler_us: u64,
    fails: bool,
}

/// The handler's part of a job: where it crashed, or how long it ran and whether it failed.
enum Work {
    Crash,
    Done { handler_us: u64, fails: bool },
}

pub struct Worker {
    slot: u32,
    ctx: FleetContext,
    handler: SimulatedHandler,
    rng: StdRng,
    poll_interval: Duration,
    claim_mode: ClaimMode,
    registry: Arc<WorkerRegistry>,
    wake_ups: WakeUps,
    on_crash: CrashAction,
    /// When the busy time reported so far ends (run-clock µs): a step starts it at its
    /// claim, and each report takes the time since.
    busy_since_us: u64,
}

impl Worker {
    pub fn new(
        plan: &ConsumerPlan,
        seed: u64,
        slot: u32,
        ctx: FleetContext,
        registry: Arc<WorkerRegistry>,
        wake_ups: WakeUps,
        on_crash: CrashAction,
    ) -> Worker {
        Worker {
            slot,
            ctx,
            handler: SimulatedHandler::new(plan.handler),
            rng: StdRng::seed_from_u64(worker_seed(seed, slot)),
            poll_interval: plan.poll_interval,
            claim_mode: plan.claim_mode,
            registry,
            wake_ups,
            on_crash,
            busy_since_us: 0,
        }
    }

    /// The busy time since the last report, up to `now_us`.
    fn take_busy(&mut self, now_us: u64) -> u64 {
        let busy = now_us.saturating_sub(self.busy_since_us);
        self.busy_since_us = self.busy_since_us.max(now_us);
        busy
    }

    /// Works until `stop` is cancelled; a job in hand is finished and committed first.
    pub async fn run(mut self, stop: CancellationToken) {
        let name = format!("worker-{}", self.slot);
        let mut conn: Option<Box<dyn Link>> = None;
        while !stop.is_cancelled() {
            if conn.is_none() {
                conn = self.ctx.connect(&name, &stop).await;
            }
            let Some(c) = conn.as_deref_mut() else { break };
            if let Some(wait) = self.registry.paused_for(self.ctx.clock.now_us()) {
                // `pause_workers`: no job is taken until the pause ends.
                sleep_or_stop(wait, &stop).await;
                continue;
            }
            match self.step(c).await {
                Ok(Step::Worked) => {}
                Ok(Step::Empty) => {
                    self.wake_ups.idle(self.poll_interval, &stop).await;
                }
                Ok(Step::Crashed(jobs)) => {
                    // The connection goes without COMMIT or ROLLBACK: the server sees the
                    // client vanish, as after a real crash.
                    drop(conn.take());
                    self.crash(jobs, &stop).await;
                }
                Err(e) => {
                    let permanent = e.error.is_permanent();
                    let usable = self.report(e, &name);
                    if permanent {
                        // Retrying cannot help: the run stops with this worker.
                        break;
                    }
                    if !usable || !c.recover(self.claim_mode).await {
                        conn = None;
                    }
                    sleep_or_stop(Duration::from_millis(50), &stop).await;
                }
            }
        }
        if let Some(c) = conn {
            c.close().await;
        }
    }

    /// Reports a step's error (and, when retrying cannot help, that the run must stop);
    /// false when the connection must be replaced.
    fn report(&self, e: StepError, name: &str) -> bool {
        self.registry.set_in_flight(self.slot, None);
        let at_us = self.ctx.clock.now_us();
        self.ctx.emit(Event::WorkerError {
            at_us,
            error: e.error.kind(),
            jobs: e.jobs,
            in_doubt: e.in_doubt,
        });
        if e.error.is_permanent() {
            self.ctx.emit(Event::Fatal {
                at_us,
                role: name.to_string(),
                error: e.error.line(),
            });
        }
        !e.error.is_connection()
    }

    async fn crash(&mut self, jobs: Vec<JobId>, stop: &CancellationToken) {
        match self.on_crash {
            CrashAction::KillProcess => {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::this(),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            CrashAction::RestartTask(restart_after) => {
                self.registry.set_in_flight(self.slot, None);
                self.ctx.emit(Event::WorkerCrashed {
                    at_us: self.ctx.clock.now_us(),
                    slot: self.slot,
                    jobs,
                    reported: Vec::new(),
                    cause: "crash".into(),
                });
                sleep_or_stop(restart_after, stop).await;
            }
        }
    }

    fn crashes_at(&self, point: CrashPoint, job: &ClaimedJob) -> bool {
        (point == CrashPoint::MidHandler && job.payload.crash)
            || self.registry.take_crash(self.slot, point)
    }

    /// Runs the handler, crashing where a crash is due.
    async fn work(&mut self, job: &ClaimedJob) -> Work {
        if self.crashes_at(CrashPoint::AfterClaim, job) {
            return Work::Crash;
        }
        let run = self.handler.draw(&mut self.rng);
        let start = self.ctx.clock.now_us();
        if self.crashes_at(CrashPoint::MidHandler, job) {
            self.handler.spend(run.duration / 2).await;
            return Work::Crash;
        }
        self.handler.spend(run.duration).await;
        let handler_us = self.ctx.clock.now_us() - start;
        if self.crashes_at(CrashPoint::AfterHandler, job) {
            return Work::Crash;
        }
        Work::Done {
            handler_us,
            fails: run.fails || job.payload.poison,
        }
    }

    fn claimed(&self, job: &ClaimedJob, (started_us, claimed_us): (u64, u64), first: bool) {
        self.registry.set_in_flight(self.slot, Some(job.id));
        self.ctx.emit(Event::Claimed {
            job: job.id,
            intended_us: job.payload.t,
            started_us: Some(started_us),
            claimed_us,
            first,
            attempt: None,
        });
        if let Handout::Redelivered { counted } = job.handout {
            self.ctx.emit(Event::Reaped {
                at_us: claimed_us,
                jobs: vec![(job.id, false)],
                counted,
            });
        }
    }

    /// Reports how a job's run ended: `None` done (`stale`: its completion finished
    /// nothing), or the failure update's outcome.
    fn finished(
        &mut self,
        job: &ClaimedJob,
        handler_us: u64,
        failed: Option<FailOutcome>,
        stale: bool,
    ) {
        let committed_us = self.ctx.clock.now_us();
        let busy_us = self.take_busy(committed_us);
        let intended_us = job.payload.t;
        self.registry.set_in_flight(self.slot, None);
        self.ctx.emit(match failed {
            None if stale => Event::Stale {
                job: job.id,
                at_us: committed_us,
                handler_us,
                failure: false,
                busy_us,
            },
            None => Event::Completed {
                job: job.id,
                intended_us,
                handler_us,
                committed_us,
                busy_us,
            },
            Some(FailOutcome::Stale) => Event::Stale {
                job: job.id,
                at_us: committed_us,
                handler_us,
                failure: true,
                busy_us,
            },
            Some(o) => Event::Failed {
                job: job.id,
                intended_us,
                handler_us,
                committed_us,
                dead_lettered: o == FailOutcome::DeadLettered,
                busy_us,
            },
        });
    }

    /// Runs the handler of each claimed job in turn (the one in hand is the registry's);
    /// `None` when the worker crashed.
    async fn work_all<'a>(&mut self, jobs: &'a [ClaimedJob]) -> Option<Vec<Handled<'a>>> {
        let mut handled = Vec::with_capacity(jobs.len());
        for job in jobs {
            self.registry.set_in_flight(self.slot, Some(job.id));
            match self.work(job).await {
                Work::Crash => return None,
                Work::Done { handler_us, fails } => handled.push(Handled {
                    job,
                    handler_us,
                    fails,
                }),
            }
        }
        Some(handled)
    }

    /// The jobs the queue dead-lettered at the claim instead of handing them out, reported
    /// as the reaps that dead-lettered them; the others, to run.
    fn set_aside_dead_letters(&self, jobs: Vec<ClaimedJob>, at_us: u64) -> Vec<ClaimedJob> {
        let (dead, jobs): (Vec<_>, Vec<_>) = jobs
            .into_iter()
            .partition(|j| j.handout == Handout::DeadLettered);
        if !dead.is_empty() {
            self.ctx.emit(Event::Reaped {
                at_us,
                jobs: dead.iter().map(|j| (j.id, true)).collect(),
                counted: true,
            });
        }
        jobs
    }

    /// One claim and what follows it: the handlers, then the jobs' outcomes committed as
    /// the claim mode says.
    async fn step(&mut self, conn: &mut dyn Link) -> Result<Step, StepError> {
        let (clock, mode) = (self.ctx.clock, self.claim_mode);
        let started_us = clock.now_us();
        self.busy_since_us = started_us;
        let jobs = conn.claim(mode).await.map_err(|error| StepError {
            // A claim that commits by itself may have committed.
            in_doubt: mode == ClaimMode::Committed && error.outcome_unknown(),
            error,
            jobs: Vec::new(),
        })?;
        let claimed_us = clock.now_us();
        let found = !jobs.is_empty();
        let jobs = self.set_aside_dead_letters(jobs, claimed_us);
        if jobs.is_empty() {
            conn.idle(mode).await.map_err(at(&[], false))?;
            // A claim whose every job went to the dead letters found work: no empty poll,
            // and the next claim follows at once.
            if found {
                return Ok(Step::Worked);
            }
            let busy_us = self.take_busy(clock.now_us());
            self.ctx.emit(Event::EmptyPoll {
                at_us: claimed_us,
                busy_us,
            });
            return Ok(Step::Empty);
        }
        let ids: Vec<JobId> = jobs.iter().map(|j| j.id).collect();
        for (i, job) in jobs.iter().enumerate() {
            self.claimed(job, (started_us, claimed_us), i == 0);
        }
        let Some(handled) = self.work_all(&jobs).await else {
            // Neither commit nor roll back: the caller drops the connection.
            return Ok(Step::Crashed(ids));
        };
        match mode {
            ClaimMode::InTransaction => self.finish_in_transaction(conn, &ids, &handled).await,
            ClaimMode::Committed => self.finish_committed(conn, &ids, &handled).await,
        }
    }

    /// The seed: the failure updates and the completions in the claim's transaction, which
    /// then commits; nothing is reported before the commit. On an error the caller rolls
    /// back.
    async fn finish_in_transaction(
        &mut self,
        conn: &mut dyn Link,
        ids: &[JobId],
        handled: &[Handled<'_>],
    ) -> Result<Step, StepError> {
        let mut outcomes = Vec::with_capacity(handled.len());
        for h in handled.iter().filter(|h| h.fails) {
            let outcome = conn
                .fail(h.job.id, SIMULATED_FAILURE)
                .await
                .map_err(at(ids, false))?;
            outcomes.push((h.job.id, outcome));
        }
        let done: Vec<JobId> = handled
            .iter()
            .filter(|h| !h.fails)
            .map(|h| h.job.id)
            .collect();
        let stale = conn
            .finish(ClaimMode::InTransaction, &done)
            .await
            .map_err(at(ids, true))?;
        for h in handled {
            let failed = outcomes.iter().find(|(id, _)| *id == h.job.id).map(|o| o.1);
            self.finished(h.job, h.handler_us, failed, stale.contains(&h.job.id));
        }
        Ok(Step::Worked)
    }

    /// The claim committed first: each failure update, and then the completion, commits on
    /// its own.
    async fn finish_committed(
        &mut self,
        conn: &mut dyn Link,
        ids: &[JobId],
        handled: &[Handled<'_>],
    ) -> Result<Step, StepError> {
        let mut open = ids.to_vec();
        for h in handled.iter().filter(|h| h.fails) {
            let outcome = conn
                .fail(h.job.id, SIMULATED_FAILURE)
                .await
                .map_err(at(&open, true))?;
            open.retain(|id| *id != h.job.id);
            self.finished(h.job, h.handler_us, Some(outcome), false);
        }
        let stale = conn
            .finish(ClaimMode::Committed, &open)
            .await
            .map_err(at(&open, true))?;
        for h in handled.iter().filter(|h| !h.fails) {
            self.finished(h.job, h.handler_us, None, stale.contains(&h.job.id));
        }
        Ok(Step::Worked)
    }
}
