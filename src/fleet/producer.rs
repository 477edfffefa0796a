//! Producers: each with its own connection, enqueueing on an open-loop schedule (or as fast
//! as it can in closed loop) phase after phase.
//!
//! Under faults an insert that surely did not commit (a connection that could not be made,
//! an error the server returned) is retried until it commits; one whose connection broke
//! while it was under way may have committed, so it is reported in doubt with its unique key
//! and settled from the table later. In outbox mode the insert shares a transaction with the
//! business update (`UPDATE orders SET status = 'paid'`), and some of those roll back.

use super::jobs::JobFactory;
use super::schedule::ArrivalSchedule;
use super::{FleetContext, sleep_or_stop};
use crate::backend::{BackendError, Insert, Link};
use crate::metrics::Event;
use crate::scenario::{Arrival, Rate};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::time::Duration;
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
    /// Outbox mode: the rollback rate of business transactions.
    pub outbox_rollback_rate: Option<f64>,
}

impl ProducerFleet {
    /// Starts every producer; they stop after the last phase or when `stop` is cancelled.
    pub fn spawn(&self, ctx: &FleetContext, stop: &CancellationToken) -> JoinSet<()> {
        let mut set = JoinSet::new();
        for index in 0..self.count {
            let producer = Producer {
                index,
                fleet: self.clone(),
                ctx: ctx.clone(),
                rng: StdRng::seed_from_u64(
                    self.seed ^ (0x9E37_79B9_7F4A_7C15u64.wrapping_mul(index as u64 + 1)),
                ),
                seq: 0,
                conn: None,
                halted: false,
            };
            set.spawn(producer.run(stop.clone()));
        }
        set
    }
}

struct Producer {
    index: usize,
    fleet: ProducerFleet,
    ctx: FleetContext,
    rng: StdRng,
    seq: u64,
    conn: Option<Box<dyn Link>>,
    /// A permanent error stopped this producer (the run stops with it).
    halted: bool,
}

impl Producer {
    fn name(&self) -> String {
        format!("producer-{}", self.index)
    }

    async fn run(mut self, stop: CancellationToken) {
        self.conn = self.ctx.connect(&self.name(), &stop).await;
        for phase in self.fleet.phases.clone() {
            if !sleep_or_stop(self.ctx.clock.until(phase.start_us), &stop).await {
                break;
            }
            match phase.rate {
                Rate::Max => {
                    while self.ctx.clock.now_us() < phase.end_us
                        && !stop.is_cancelled()
                        && !self.halted
                    {
                        let now = self.ctx.clock.now_us();
                        self.enqueue(now, None, &stop).await;
                    }
                }
                Rate::PerSecond(r) if r <= 0.0 => {
                    sleep_or_stop(self.ctx.clock.until(phase.end_us), &stop).await;
                }
                Rate::PerSecond(r) => {
                    let (index, count, arrival) =
                        (self.index, self.fleet.count, self.fleet.arrival);
                    let mut schedule = ArrivalSchedule::new(
                        phase.start_us,
                        phase.end_us,
                        r,
                        index,
                        count,
                        arrival,
                        &mut self.rng,
                    );
                    while let Some(intended) = schedule.next(&mut self.rng) {
                        if self.halted {
                            break;
                        }
                        let now = self.ctx.clock.now_us();
                        if now >= phase.end_us {
                            // The phase is over: what its schedule still holds is dropped,
                            // not sent late into the next phase (or the drain).
                            let mut count = 1;
                            while schedule.next(&mut self.rng).is_some() {
                                count += 1;
                            }
                            self.ctx.emit(Event::Dropped {
                                intended_us: intended,
                                count,
                            });
                            break;
                        }
                        // Already past its time before sleeping: the previous insert made it late.
                        let behind = now > intended;
                        if !sleep_or_stop(self.ctx.clock.until(intended), &stop).await {
                            break;
                        }
                        self.enqueue(intended, Some(behind), &stop).await;
                    }
                }
            }
        }
        if let Some(conn) = self.conn.take() {
            conn.close().await;
        }
    }

    /// Enqueues one job scheduled for `intended_us`, retrying while it surely has not
    /// committed. An insert is never abandoned half-way: `stop` is only looked at between
    /// tries.
    /// `behind`: open loop, and whether the producer was still busy when the job was due
    /// (`None` in closed loop).
    async fn enqueue(&mut self, intended_us: u64, behind: Option<bool>, stop: &CancellationToken) {
        let open_loop = behind.is_some();
        self.seq += 1;
        let key = format!("{}-p{}-{}", self.fleet.key_prefix, self.index, self.seq);
        // Order ids are unique across producers: seq·count + index.
        let order = self
            .fleet
            .outbox_rollback_rate
            .map(|_| (self.seq - 1) as i64 * self.fleet.count as i64 + self.index as i64 + 1);
        let made = self
            .fleet
            .factory
            .make(&mut self.rng, key, intended_us, order);
        let mut backoff = Duration::from_millis(50);
        loop {
            if self.conn.is_none() {
                self.conn = self.ctx.connect(&self.name(), stop).await;
            }
            let Some(conn) = self.conn.as_mut() else {
                return;
            };
            let sent_us = self.ctx.clock.now_us();
            let result = match (self.fleet.outbox_rollback_rate, order) {
                (Some(rate), Some(order)) => {
                    let roll_back = rate > 0.0 && self.rng.random_bool(rate);
                    conn.enqueue_in_outbox(&made.job, order, roll_back).await
                }
                _ => conn
                    .enqueue(&made.job)
                    .await
                    .map(Insert::Committed)
                    .map_err(|e| (e, true)),
            };
            let at_us = self.ctx.clock.now_us();
            let failed = match result {
                Ok(Insert::Committed(id)) => {
                    let (poison, crash) = (made.poison, made.crash);
                    self.ctx.emit(Event::Enqueued {
                        job: id,
                        intended_us,
                        sent_us,
                        committed_us: at_us,
                        open_loop,
                        poison,
                        crash,
                        behind: behind.unwrap_or(false),
                    });
                    return;
                }
                Ok(Insert::RolledBack) => {
                    self.ctx.emit(Event::EnqueueRolledBack {
                        at_us,
                        key: made.key,
                    });
                    return;
                }
                Err(failed) => failed,
            };
            if !self.failed(failed, at_us, &made.key, stop) || !sleep_or_stop(backoff, stop).await {
                return;
            }
            backoff = (backoff * 2).min(Duration::from_secs(1));
        }
    }

    /// Reports an insert that did not commit (or may have): in doubt when the connection
    /// broke while committing, fatal when retrying cannot help; whether to try it again
    /// (after the backoff).
    fn failed(
        &mut self,
        (e, committing): (BackendError, bool),
        at_us: u64,
        key: &str,
        stop: &CancellationToken,
    ) -> bool {
        if committing && e.outcome_unknown() {
            self.conn = None;
            self.ctx.emit(Event::EnqueueInDoubt {
                at_us,
                key: key.to_string(),
                error: e.kind(),
            });
            return false;
        }
        if e.is_permanent() {
            self.ctx.emit(Event::EnqueueFailed {
                at_us,
                error: e.kind(),
                retrying: false,
            });
            self.ctx.emit(Event::Fatal {
                at_us,
                role: format!("{} (insert)", self.name()),
                error: e.line(),
            });
            self.halted = true;
            return false;
        }
        let retrying = !stop.is_cancelled();
        self.ctx.emit(Event::EnqueueFailed {
            at_us,
            error: e.kind(),
            retrying,
        });
        if e.is_connection() {
            self.conn = None;
        }
        retrying
    }
}
