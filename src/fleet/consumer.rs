//! Consumers: the seed's worker, in either claim mode.
//!
//! - `in_transaction` (the seed): one transaction per job that claims (`FOR UPDATE SKIP
//!   LOCKED`), runs the handler while holding the row lock, and commits `done` or the failure
//!   update. A crash rolls the claim back by itself.
//! - `committed`: the claim commits `processing` first, the handler runs outside any
//!   transaction, and `done` or the failure update commits separately. A crashed worker's
//!   job stays `processing` until the reaper returns it.
//!
//! A worker runs as a task of the runner, or alone in a child process (`consumers.processes`,
//! see `process`). An empty claim sleeps `poll_interval`.

use super::handler::SimulatedHandler;
use super::registry::WorkerRegistry;
use super::{FleetContext, error_kind, is_connection_error, outcome_unknown, sleep_or_stop};
use crate::metrics::{Event, JobId};
use crate::queue::{ClaimedJob, FailOutcome};
use crate::scenario::{ClaimMode, ConsumerPlan, CrashPoint};
use rand::SeedableRng;
use rand::rngs::StdRng;
use sqlx::Connection;
use sqlx::postgres::PgConnection;
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

/// Task workers, one per slot of the registry.
pub fn spawn_tasks(
    plan: &ConsumerPlan,
    seed: u64,
    ctx: &FleetContext,
    registry: &Arc<WorkerRegistry>,
    stop: &CancellationToken,
) -> JoinSet<()> {
    let mut set = JoinSet::new();
    for slot in 0..registry.len() as u32 {
        let worker = Worker::new(
            plan,
            seed,
            slot,
            ctx.clone(),
            registry.clone(),
            CrashAction::RestartTask(plan.restart_after),
        );
        set.spawn(worker.run(stop.clone()));
    }
    set
}

enum Step {
    Worked,
    Empty,
    /// The worker died holding this job.
    Crashed(JobId),
}

/// A database error in a step, with the job it concerned and whether the job's last
/// change may have committed after all.
struct StepError {
    error: sqlx::Error,
    job: Option<JobId>,
    in_doubt: bool,
}

fn at(job: JobId, committing: bool) -> impl Fn(sqlx::Error) -> StepError {
    move |error| {
        let in_doubt = committing && outcome_unknown(&error);
        StepError {
            error,
            job: Some(job),
            in_doubt,
        }
    }
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
    on_crash: CrashAction,
}

impl Worker {
    pub fn new(
        plan: &ConsumerPlan,
        seed: u64,
        slot: u32,
        ctx: FleetContext,
        registry: Arc<WorkerRegistry>,
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
            on_crash,
        }
    }

    /// Works until `stop` is cancelled; a job in hand is finished and committed first.
    pub async fn run(mut self, stop: CancellationToken) {
        let name = format!("worker-{}", self.slot);
        let mut conn: Option<PgConnection> = None;
        while !stop.is_cancelled() {
            if conn.is_none() {
                conn = self.ctx.connect(&name, &stop).await;
            }
            let Some(c) = conn.as_mut() else { break };
            let step = match self.claim_mode {
                ClaimMode::InTransaction => self.step_in_transaction(c).await,
                ClaimMode::Committed => self.step_committed(c).await,
            };
            match step {
                Ok(Step::Worked) => {}
                Ok(Step::Empty) => {
                    sleep_or_stop(self.poll_interval, &stop).await;
                }
                Ok(Step::Crashed(job)) => {
                    // The connection goes without COMMIT or ROLLBACK: the server sees the
                    // client vanish, as after a real crash.
                    drop(conn.take());
                    self.crash(job, &stop).await;
                }
                Err(StepError {
                    error,
                    job,
                    in_doubt,
                }) => {
                    self.registry.set_in_flight(self.slot, None);
                    self.ctx.emit(Event::WorkerError {
                        at_us: self.ctx.clock.now_us(),
                        error: error_kind(&error),
                        job,
                        in_doubt,
                    });
                    if is_connection_error(&error) {
                        conn = None;
                    }
                    sleep_or_stop(Duration::from_millis(50), &stop).await;
                }
            }
        }
        if let Some(c) = conn {
            c.close().await.ok();
        }
    }

    async fn crash(&mut self, job: JobId, stop: &CancellationToken) {
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
                    job: Some(job),
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
            tokio::time::sleep(run.duration / 2).await;
            return Work::Crash;
        }
        if !run.duration.is_zero() {
            tokio::time::sleep(run.duration).await;
        }
        let handler_us = self.ctx.clock.now_us() - start;
        if self.crashes_at(CrashPoint::AfterHandler, job) {
            return Work::Crash;
        }
        Work::Done {
            handler_us,
            fails: run.fails || job.payload.poison,
        }
    }

    fn claimed(&self, job: &ClaimedJob, started_us: u64, claimed_us: u64) {
        self.registry.set_in_flight(self.slot, Some(job.id));
        self.ctx.emit(Event::Claimed {
            job: job.id,
            intended_us: job.payload.t,
            started_us,
            claimed_us,
        });
    }

    fn finished(&self, job: &ClaimedJob, handler_us: u64, failed: Option<FailOutcome>) {
        let committed_us = self.ctx.clock.now_us();
        let intended_us = job.payload.t;
        self.registry.set_in_flight(self.slot, None);
        self.ctx.emit(match failed {
            None => Event::Completed {
                job: job.id,
                intended_us,
                handler_us,
                committed_us,
            },
            Some(o) => Event::Failed {
                job: job.id,
                intended_us,
                handler_us,
                committed_us,
                dead_lettered: o == FailOutcome::DeadLettered,
            },
        });
    }

    /// The seed: claim, handle, complete or fail, commit, all in one transaction. On an
    /// error the transaction is dropped, which rolls it back (the claim with it).
    async fn step_in_transaction(&mut self, conn: &mut PgConnection) -> Result<Step, StepError> {
        let clock = self.ctx.clock;
        let queue = self.ctx.queue;
        let no_job = |error| StepError {
            error,
            job: None,
            in_doubt: false,
        };
        let mut tx = conn.begin().await.map_err(no_job)?;
        let started_us = clock.now_us();
        let job = queue.claim(&mut tx).await.map_err(no_job)?;
        let claimed_us = clock.now_us();
        let Some(job) = job else {
            tx.commit().await.map_err(no_job)?;
            self.ctx.emit(Event::EmptyPoll { at_us: claimed_us });
            return Ok(Step::Empty);
        };
        self.claimed(&job, started_us, claimed_us);
        match self.work(&job).await {
            Work::Crash => {
                // Neither commit nor roll back: forget the transaction, drop the connection.
                std::mem::forget(tx);
                Ok(Step::Crashed(job.id))
            }
            Work::Done { handler_us, fails } => {
                let outcome = if fails {
                    Some(
                        queue
                            .fail(&mut tx, job.id, SIMULATED_FAILURE)
                            .await
                            .map_err(at(job.id, false))?,
                    )
                } else {
                    queue
                        .complete(&mut tx, job.id)
                        .await
                        .map_err(at(job.id, false))?;
                    None
                };
                tx.commit().await.map_err(at(job.id, true))?;
                self.finished(&job, handler_us, outcome);
                Ok(Step::Worked)
            }
        }
    }

    /// Claim committed first; the handler runs outside any transaction; the completion or
    /// failure update commits on its own.
    async fn step_committed(&mut self, conn: &mut PgConnection) -> Result<Step, StepError> {
        let clock = self.ctx.clock;
        let queue = self.ctx.queue;
        let started_us = clock.now_us();
        let job = queue.claim(conn).await.map_err(|error| {
            let in_doubt = outcome_unknown(&error);
            StepError {
                error,
                job: None,
                in_doubt,
            }
        })?;
        let claimed_us = clock.now_us();
        let Some(job) = job else {
            self.ctx.emit(Event::EmptyPoll { at_us: claimed_us });
            return Ok(Step::Empty);
        };
        self.claimed(&job, started_us, claimed_us);
        match self.work(&job).await {
            Work::Crash => Ok(Step::Crashed(job.id)),
            Work::Done { handler_us, fails } => {
                let outcome = if fails {
                    Some(
                        queue
                            .fail(conn, job.id, SIMULATED_FAILURE)
                            .await
                            .map_err(at(job.id, true))?,
                    )
                } else {
                    queue
                        .complete(conn, job.id)
                        .await
                        .map_err(at(job.id, true))?;
                    None
                };
                self.finished(&job, handler_us, outcome);
                Ok(Step::Worked)
            }
        }
    }
}
