//! A producer: one connection's inserts. The pacer ([`super::pacer`]) hands each open-loop
//! arrival to whichever producer is free; in closed loop each producer inserts as fast as
//! it can until its phase ends.
//!
//! Under faults an insert that surely did not commit (a connection that could not be made,
//! an error the server returned) is retried until it commits; one whose connection broke
//! while it was under way may have committed, so it is reported in doubt with its unique key
//! and settled from the table later. In outbox mode the insert shares a transaction with the
//! business update (`UPDATE orders SET status = 'paid'`), and some of those roll back.

use super::jobs::JobFactory;
use super::{FleetContext, sleep_or_stop};
use crate::backend::{BackendError, Insert, Link};
use crate::metrics::Event;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::mpsc::{Receiver, UnboundedSender};
use tokio_util::sync::CancellationToken;

/// What every producer of a step shares.
#[derive(Debug, Clone)]
pub struct ProducerShared {
    pub factory: JobFactory,
    pub seed: u64,
    /// Prefix of every job key, unique per step.
    pub key_prefix: String,
    /// Outbox mode: the rollback rate of business transactions.
    pub outbox_rollback_rate: Option<f64>,
    /// The step's jobs so far: each job's key and outbox order come from it.
    pub sequence: Arc<AtomicU64>,
}

/// What the pacer asks of a free producer.
#[derive(Debug, Clone, Copy)]
pub enum Order {
    /// Insert one job due at `intended_us`; `behind`: no producer was free when it was due.
    Send { intended_us: u64, behind: bool },
    /// Closed loop: insert one job after another until `end_us`.
    Closed { end_us: u64 },
}

pub struct Producer {
    pub index: usize,
    shared: ProducerShared,
    ctx: FleetContext,
    rng: StdRng,
    conn: Option<Box<dyn Link>>,
    /// A permanent error stopped this producer (the run stops with it).
    halted: bool,
}

impl Producer {
    pub fn new(index: usize, shared: ProducerShared, ctx: FleetContext) -> Producer {
        let seed = shared.seed ^ 0x9E37_79B9_7F4A_7C15u64.wrapping_mul(index as u64 + 1);
        Producer {
            index,
            shared,
            ctx,
            rng: StdRng::seed_from_u64(seed),
            conn: None,
            halted: false,
        }
    }

    fn name(&self) -> String {
        format!("producer-{}", self.index)
    }

    /// Connects (unless `closing` is cancelled first), then says it is free on `free` and
    /// carries out orders until the pacer drops its end of `orders` (or a permanent error
    /// halts it).
    pub async fn run(
        mut self,
        mut orders: Receiver<Order>,
        free: UnboundedSender<usize>,
        stop: CancellationToken,
        closing: CancellationToken,
    ) {
        self.conn = self.ctx.connect(&self.name(), &closing).await;
        while !self.halted && free.send(self.index).is_ok() {
            let Some(order) = orders.recv().await else {
                break;
            };
            match order {
                Order::Send {
                    intended_us,
                    behind,
                } => self.enqueue(intended_us, Some(behind), &stop).await,
                Order::Closed { end_us } => {
                    while self.ctx.clock.now_us() < end_us && !stop.is_cancelled() && !self.halted {
                        let now = self.ctx.clock.now_us();
                        self.enqueue(now, None, &stop).await;
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
    /// `behind`: open loop, and whether every producer was busy when the job was due
    /// (`None` in closed loop).
    async fn enqueue(&mut self, intended_us: u64, behind: Option<bool>, stop: &CancellationToken) {
        let open_loop = behind.is_some();
        let seq = self.shared.sequence.fetch_add(1, Ordering::Relaxed) + 1;
        let key = format!("{}-{seq}", self.shared.key_prefix);
        let order = self.shared.outbox_rollback_rate.map(|_| seq as i64);
        let made = self
            .shared
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
            let result = match (self.shared.outbox_rollback_rate, order) {
                (Some(rate), Some(order)) => {
                    let roll_back = rate > 0.0 && self.rng.random_bool(rate);
                    match conn.outbox() {
                        Some(outbox) => outbox.enqueue_in_outbox(&made.job, order, roll_back).await,
                        None => Err((
                            crate::backend::BackendError::unsupported("the outbox", "this engine"),
                            false,
                        )),
                    }
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
