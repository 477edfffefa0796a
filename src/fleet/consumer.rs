//! Consumers: the seed's worker. One connection each; per job one transaction that claims
//! (`FOR UPDATE SKIP LOCKED`), runs the handler while holding the row lock, and commits
//! `done` or the failure update. An empty claim sleeps `poll_interval`.

use super::handler::SimulatedHandler;
use super::{FleetContext, error_kind, is_connection_error, sleep_or_stop};
use crate::metrics::Event;
use rand::SeedableRng;
use rand::rngs::StdRng;
use sqlx::Connection;
use sqlx::postgres::PgConnection;
use std::time::Duration;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Message written to `error_msg` by a simulated failure.
pub const SIMULATED_FAILURE: &str = "simulated handler failure";

#[derive(Debug, Clone)]
pub struct ConsumerFleet {
    pub count: usize,
    pub poll_interval: Duration,
    pub handler: SimulatedHandler,
    pub seed: u64,
}

impl ConsumerFleet {
    /// Starts every worker. A worker stops between jobs once `stop` is cancelled: the job it
    /// holds is finished and committed first.
    pub fn spawn(&self, ctx: &FleetContext, stop: &CancellationToken) -> JoinSet<()> {
        let mut set = JoinSet::new();
        for index in 0..self.count {
            let worker = Worker {
                ctx: ctx.clone(),
                handler: self.handler.clone(),
                rng: StdRng::seed_from_u64(
                    self.seed.rotate_left(17)
                        ^ (0xD1B5_4A32_D192_ED03u64.wrapping_mul(index as u64 + 1)),
                ),
                poll_interval: self.poll_interval,
            };
            set.spawn(worker.run(stop.clone()));
        }
        set
    }
}

enum Step {
    Worked,
    Empty,
}

struct Worker {
    ctx: FleetContext,
    handler: SimulatedHandler,
    rng: StdRng,
    poll_interval: Duration,
}

impl Worker {
    async fn run(mut self, stop: CancellationToken) {
        let mut conn: Option<PgConnection> = None;
        while !stop.is_cancelled() {
            if conn.is_none() {
                conn = self.ctx.connect(&stop).await;
            }
            let Some(c) = conn.as_mut() else { break };
            match self.step(c).await {
                Ok(Step::Worked) => {}
                Ok(Step::Empty) => {
                    sleep_or_stop(self.poll_interval, &stop).await;
                }
                Err(e) => {
                    self.ctx.emit(Event::WorkerError {
                        at_us: self.ctx.clock.now_us(),
                        error: error_kind(&e),
                    });
                    if is_connection_error(&e) {
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

    /// One transaction: claim, handle, complete or fail, commit. On any error the
    /// transaction is dropped, which rolls it back (the claim with it).
    async fn step(&mut self, conn: &mut PgConnection) -> Result<Step, sqlx::Error> {
        let clock = self.ctx.clock;
        let queue = self.ctx.queue;
        let mut tx = conn.begin().await?;
        let started_us = clock.now_us();
        let job = queue.claim(&mut tx).await?;
        let claimed_us = clock.now_us();
        let Some(job) = job else {
            tx.commit().await?;
            self.ctx.emit(Event::EmptyPoll { at_us: claimed_us });
            return Ok(Step::Empty);
        };
        let intended_us = job.payload.t;
        self.ctx.emit(Event::Claimed {
            job: job.id,
            intended_us,
            started_us,
            claimed_us,
        });

        let run = self.handler.draw(&mut self.rng);
        let handler_start = clock.now_us();
        if !run.duration.is_zero() {
            tokio::time::sleep(run.duration).await;
        }
        let handler_us = clock.now_us() - handler_start;

        if run.fails {
            let outcome = queue.fail(&mut tx, job.id, SIMULATED_FAILURE).await?;
            tx.commit().await?;
            let dead_lettered = outcome == crate::queue::FailOutcome::DeadLettered;
            self.ctx.emit(Event::Failed {
                job: job.id,
                intended_us,
                handler_us,
                committed_us: clock.now_us(),
                dead_lettered,
            });
        } else {
            queue.complete(&mut tx, job.id).await?;
            tx.commit().await?;
            self.ctx.emit(Event::Completed {
                job: job.id,
                intended_us,
                handler_us,
                committed_us: clock.now_us(),
            });
        }
        Ok(Step::Worked)
    }
}
