//! The pacer: one schedule of arrivals for the whole fleet, each handed at its intended
//! time to whichever producer connection is free. When every connection is busy the fleet
//! opens another, up to `max_count` (as k6's arrival-rate executors add virtual users up to
//! `maxVUs`), so a slow insert delays no other arrival: a job goes out late only when every
//! connection the fleet may have is busy, or when the harness itself wakes late.
//!
//! The pool keeps one spare connection opening ahead while every open one is busy, so that
//! growing rarely makes an arrival wait for a connection to be made.

use super::producer::{Order, Producer, ProducerShared};
use super::schedule::ArrivalSchedule;
use super::{FleetContext, sleep_or_stop};
use crate::metrics::Event;
use crate::scenario::{Arrival, Rate};
use rand::SeedableRng;
use rand::rngs::StdRng;
use std::collections::VecDeque;
use tokio::sync::mpsc::{self, Sender, UnboundedReceiver, UnboundedSender};
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
    /// Connections opened at the start (closed loop: the producers).
    pub count: usize,
    /// Open loop: the most connections the fleet may grow to.
    pub max_count: usize,
    pub arrival: Arrival,
    pub phases: Vec<ScheduledPhase>,
    pub shared: ProducerShared,
}

impl ProducerFleet {
    /// Starts the fleet; it ends after the last phase (every insert under way finished) or
    /// soon after `stop` is cancelled.
    pub fn spawn(&self, ctx: &FleetContext, stop: &CancellationToken) -> JoinSet<()> {
        let mut set = JoinSet::new();
        let pacer = Pacer {
            fleet: self.clone(),
            pool: Pool::new(self, ctx, stop),
            rng: StdRng::seed_from_u64(self.shared.seed.rotate_left(29)),
        };
        set.spawn(pacer.run(stop.clone()));
        set
    }
}

/// The producers and which of them are free.
struct Pool {
    ctx: FleetContext,
    shared: ProducerShared,
    max: usize,
    orders: Vec<Sender<Order>>,
    /// Producers that have said they are free, in the order they did.
    free: VecDeque<usize>,
    said_free: UnboundedReceiver<usize>,
    say_free: UnboundedSender<usize>,
    /// Whether each producer has connected (said it was free once).
    connected: Vec<bool>,
    /// Orders handed out and not yet finished.
    busy: usize,
    /// The most orders under way at once in the current phase.
    peak_busy: usize,
    tasks: JoinSet<()>,
    stop: CancellationToken,
    /// Cancelled when the pool closes: a producer still connecting then gives up.
    closing: CancellationToken,
}

impl Pool {
    fn new(fleet: &ProducerFleet, ctx: &FleetContext, stop: &CancellationToken) -> Pool {
        let (say_free, said_free) = mpsc::unbounded_channel();
        let mut pool = Pool {
            ctx: ctx.clone(),
            shared: fleet.shared.clone(),
            max: fleet.max_count.max(fleet.count),
            orders: Vec::new(),
            free: VecDeque::new(),
            said_free,
            say_free,
            connected: Vec::new(),
            busy: 0,
            peak_busy: 0,
            tasks: JoinSet::new(),
            stop: stop.clone(),
            closing: stop.child_token(),
        };
        for _ in 0..fleet.count {
            pool.open();
        }
        pool
    }

    /// Starts one more producer; it says it is free once connected.
    fn open(&mut self) {
        let index = self.orders.len();
        let (orders, receive) = mpsc::channel(1);
        self.orders.push(orders);
        self.connected.push(false);
        let producer = Producer::new(index, self.shared.clone(), self.ctx.clone());
        let free = self.say_free.clone();
        let (stop, closing) = (self.stop.clone(), self.closing.clone());
        self.tasks.spawn(producer.run(receive, free, stop, closing));
        self.report();
    }

    fn opening(&self) -> bool {
        self.connected.iter().any(|c| !c)
    }

    /// Takes in a producer's word that it is free.
    fn freed(&mut self, index: usize) {
        if std::mem::replace(&mut self.connected[index], true) {
            self.busy = self.busy.saturating_sub(1);
        }
        self.free.push_back(index);
    }

    /// Takes in every producer that has said it is free since the last look.
    fn collect(&mut self) {
        while let Ok(index) = self.said_free.try_recv() {
            self.freed(index);
        }
    }

    /// A free producer: at once if one is free (`false`), else after waiting for one
    /// (`true`), opening another connection first when the pool may grow. `None` when
    /// `stop` was cancelled.
    async fn acquire(&mut self) -> Option<(usize, bool)> {
        self.collect();
        if let Some(index) = self.free.pop_front() {
            return Some((index, false));
        }
        if self.orders.len() < self.max && !self.opening() {
            self.open();
        }
        tokio::select! {
            index = self.said_free.recv() => {
                self.freed(index?);
                Some((self.free.pop_front()?, true))
            }
            _ = self.stop.cancelled() => None,
        }
    }

    /// Hands `order` (told whether it waited for a producer) to a free producer before
    /// `end_us`: `Some(true)` when handed, `Some(false)` when the end came first, `None`
    /// when `stop` was cancelled.
    async fn dispatch(&mut self, order: impl Fn(bool) -> Order, end_us: u64) -> Option<bool> {
        let mut waited = false;
        loop {
            let (index, w) = self.acquire().await?;
            waited |= w;
            if self.ctx.clock.now_us() >= end_us {
                self.free.push_front(index);
                return Some(false);
            }
            // A producer halted by a permanent error takes no more orders: try the next.
            if self.orders[index].try_send(order(waited)).is_ok() {
                self.busy += 1;
                if self.busy > self.peak_busy {
                    self.peak_busy = self.busy;
                    self.report();
                }
                self.keep_a_spare();
                return Some(true);
            }
        }
    }

    /// While every open connection is busy, opens one more ahead of the next arrival.
    fn keep_a_spare(&mut self) {
        self.collect();
        if self.free.is_empty() && self.orders.len() < self.max && !self.opening() {
            self.open();
        }
    }

    /// Reports the connections and the orders under way, for the summary.
    fn report(&self) {
        self.ctx.emit(Event::ProducerPool {
            at_us: self.ctx.clock.now_us(),
            connections: self.orders.len() as u32,
            in_flight: self.peak_busy as u32,
        });
    }

    /// Lets every producer finish what it has, then close.
    async fn close(mut self) {
        self.orders.clear();
        self.closing.cancel();
        while self.tasks.join_next().await.is_some() {}
    }
}

struct Pacer {
    fleet: ProducerFleet,
    pool: Pool,
    rng: StdRng,
}

impl Pacer {
    async fn run(mut self, stop: CancellationToken) {
        for phase in self.fleet.phases.clone() {
            if !sleep_or_stop(self.until(phase.start_us), &stop).await {
                break;
            }
            self.pool.peak_busy = 0;
            let carried_on = match phase.rate {
                Rate::Max => self.closed_loop(phase).await,
                Rate::PerSecond(r) if r <= 0.0 => {
                    sleep_or_stop(self.until(phase.end_us), &stop).await
                }
                Rate::PerSecond(r) => self.open_loop(phase, r).await,
            };
            if !carried_on {
                break;
            }
        }
        self.pool.close().await;
    }

    fn until(&self, at_us: u64) -> std::time::Duration {
        self.pool.ctx.clock.until(at_us)
    }

    /// Every one of the fleet's `count` producers inserts as fast as it can until the end.
    async fn closed_loop(&mut self, phase: ScheduledPhase) -> bool {
        for _ in 0..self.fleet.count {
            let end_us = phase.end_us;
            let order = |_| Order::Closed { end_us };
            if self.pool.dispatch(order, end_us).await.is_none() {
                return false;
            }
        }
        sleep_or_stop(self.until(phase.end_us), &self.pool.stop).await
    }

    /// The phase's arrivals, each to a free producer at its intended time.
    async fn open_loop(&mut self, phase: ScheduledPhase, rate: f64) -> bool {
        let (arrival, end) = (self.fleet.arrival, phase.end_us);
        let window = (phase.start_us, end);
        let mut schedule = ArrivalSchedule::new(window, rate, arrival, &mut self.rng);
        let clock = self.pool.ctx.clock;
        while let Some(intended_us) = schedule.next(&mut self.rng) {
            let now = clock.now_us();
            if now >= end {
                self.drop_the_rest(intended_us, &mut schedule);
                return true;
            }
            // A job already due goes at once: even a zero sleep waits for the timer's next
            // tick (1 ms), and arrivals that come close together would queue behind it.
            if intended_us > now && !sleep_or_stop(clock.until(intended_us), &self.pool.stop).await
            {
                return false;
            }
            if self.pool.stop.is_cancelled() {
                return false;
            }
            let order = |behind| Order::Send {
                intended_us,
                behind,
            };
            match self.pool.dispatch(order, end).await {
                None => return false,
                // Every producer was busy until the phase ended.
                Some(false) => {
                    self.drop_the_rest(intended_us, &mut schedule);
                    return true;
                }
                Some(true) => {}
            }
        }
        // The phase lasts until its end, not until its last arrival: at a low rate the
        // last one comes well before it, and the run's window would end there.
        sleep_or_stop(self.until(end), &self.pool.stop).await
    }

    /// The phase is over: what its schedule still holds is dropped, not sent late into the
    /// next phase (or the drain).
    fn drop_the_rest(&mut self, intended_us: u64, schedule: &mut ArrivalSchedule) {
        let mut count = 1;
        while schedule.next(&mut self.rng).is_some() {
            count += 1;
        }
        self.pool.ctx.emit(Event::Dropped { intended_us, count });
    }
}
