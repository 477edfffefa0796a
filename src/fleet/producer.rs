//! Producers: each with its own connection, enqueueing on an open-loop schedule (or as fast
//! as it can in closed loop) phase after phase.

use super::jobs::JobFactory;
use super::schedule::ArrivalSchedule;
use super::{FleetContext, error_kind, is_connection_error, sleep_or_stop};
use crate::metrics::Event;
use crate::scenario::{Arrival, Rate};
use rand::SeedableRng;
use rand::rngs::StdRng;
use sqlx::Connection;
use sqlx::postgres::PgConnection;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// A phase as producers see it: a window of the run clock and the fleet's offered rate.
#[derive(Debug, Clone, Copy)]
pub struct ScheduledPhase {
    pub start_us: u64,
    pub end_us: u64,
    pub rate: Rate,
}

/// How the fleet is made up.
#[derive(Debug, Clone)]
pub struct ProducerFleet {
    pub count: usize,
    pub arrival: Arrival,
    pub factory: JobFactory,
    pub phases: Vec<ScheduledPhase>,
    pub seed: u64,
    /// Prefix of every job key, unique per run.
    pub key_prefix: String,
}

impl ProducerFleet {
    /// Starts every producer; they stop after the last phase or when `stop` is cancelled.
    pub fn spawn(&self, ctx: &FleetContext, stop: &CancellationToken) -> JoinSet<()> {
        let mut set = JoinSet::new();
        for index in 0..self.count {
            let producer = Producer {
                index,
                ctx: ctx.clone(),
                factory: self.factory.clone(),
                rng: StdRng::seed_from_u64(
                    self.seed ^ (0x9E37_79B9_7F4A_7C15u64.wrapping_mul(index as u64 + 1)),
                ),
                key_prefix: format!("{}-p{index}", self.key_prefix),
                seq: 0,
                conn: None,
            };
            set.spawn(producer.run(self.phases.clone(), self.count, self.arrival, stop.clone()));
        }
        set
    }
}

struct Producer {
    index: usize,
    ctx: FleetContext,
    factory: JobFactory,
    rng: StdRng,
    key_prefix: String,
    seq: u64,
    conn: Option<PgConnection>,
}

impl Producer {
    async fn run(
        mut self,
        phases: Vec<ScheduledPhase>,
        producers: usize,
        arrival: Arrival,
        stop: CancellationToken,
    ) {
        self.conn = self.ctx.connect(&stop).await;
        for phase in phases {
            if !sleep_or_stop(self.ctx.clock.until(phase.start_us), &stop).await {
                break;
            }
            match phase.rate {
                Rate::Max => {
                    while self.ctx.clock.now_us() < phase.end_us && !stop.is_cancelled() {
                        let now = self.ctx.clock.now_us();
                        self.enqueue(now, false, &stop).await;
                    }
                }
                Rate::PerSecond(r) if r <= 0.0 => {
                    sleep_or_stop(self.ctx.clock.until(phase.end_us), &stop).await;
                }
                Rate::PerSecond(r) => {
                    let mut schedule = ArrivalSchedule::new(
                        phase.start_us,
                        phase.end_us,
                        r,
                        self.index,
                        producers,
                        arrival,
                        &mut self.rng,
                    );
                    while let Some(intended) = schedule.next(&mut self.rng) {
                        if !sleep_or_stop(self.ctx.clock.until(intended), &stop).await {
                            break;
                        }
                        self.enqueue(intended, true, &stop).await;
                    }
                }
            }
        }
        if let Some(conn) = self.conn.take() {
            conn.close().await.ok();
        }
    }

    /// Inserts one job scheduled for `intended_us`. An insert is never abandoned half-way:
    /// `stop` is only looked at between jobs.
    async fn enqueue(&mut self, intended_us: u64, open_loop: bool, stop: &CancellationToken) {
        if self.conn.is_none() {
            self.conn = self.ctx.connect(stop).await;
        }
        let Some(conn) = self.conn.as_mut() else {
            return;
        };
        self.seq += 1;
        let key = format!("{}-{}", self.key_prefix, self.seq);
        let job = self.factory.make(&mut self.rng, &key, intended_us);
        let sent_us = self.ctx.clock.now_us();
        match self.ctx.queue.enqueue(conn, &job).await {
            Ok(id) => {
                let committed_us = self.ctx.clock.now_us();
                self.ctx.emit(Event::Enqueued {
                    job: id,
                    intended_us,
                    sent_us,
                    committed_us,
                    open_loop,
                });
            }
            Err(e) => {
                self.ctx.emit(Event::EnqueueFailed {
                    at_us: self.ctx.clock.now_us(),
                    error: error_kind(&e),
                });
                if is_connection_error(&e) {
                    self.conn = None;
                }
            }
        }
    }
}
