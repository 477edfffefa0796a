//! The bystander: statements on a small table unrelated to the queue (point reads and
//! single-row updates by primary key, alternately), on a fixed schedule from a connection of
//! its own. Its latency is what the queue's load costs the rest of the database that shares
//! the server. Open loop: each statement is timed from its intended time, so a stall shows
//! as latency rather than as statements never sent.

use super::{FleetContext, sleep_or_stop};
use crate::backend::{Backend, Link};
use crate::clock::RunClock;
use crate::metrics::{Event, LatencySummary};
use crate::scenario::BystanderPlan;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The bystander's load: its rate, its table's size and the seed of its row choices.
#[derive(Debug, Clone, Copy)]
pub struct Bystander {
    pub plan: BystanderPlan,
    pub seed: u64,
}

impl Bystander {
    /// Runs from `start_us` until `end_us` on the run clock (or `stop`), one [`Event`] per
    /// statement.
    pub async fn run(
        self,
        ctx: FleetContext,
        (start_us, end_us): (u64, u64),
        stop: CancellationToken,
    ) {
        let emit = |intended_us, done_us, ok| {
            ctx.emit(Event::Bystander {
                intended_us,
                done_us,
                ok,
            })
        };
        self.drive(&ctx, (start_us, end_us), &stop, emit).await;
    }

    /// Measured alone for `length` (nothing else of the run under way): the percentiles of
    /// its statements' latency, or `None` if none answered.
    pub async fn quiet(
        self,
        backend: Arc<dyn Backend>,
        clock: RunClock,
        length: Duration,
        stop: &CancellationToken,
    ) -> Option<LatencySummary> {
        let (events, _) = tokio::sync::mpsc::unbounded_channel();
        let ctx = FleetContext {
            backend,
            clock,
            events: events.into(),
        };
        let mut hist = crate::metrics::histogram::empty();
        let start = clock.now_us();
        let end = start + length.as_micros() as u64;
        let record = |intended: u64, done: u64, ok: bool| {
            if ok {
                hist.saturating_record(done.saturating_sub(intended).max(1));
            }
        };
        self.drive(&ctx, (start, end), stop, record).await;
        (!hist.is_empty()).then(|| LatencySummary::of(&hist))
    }

    /// The schedule: statement `i` is due at `start_us + i / rate`; each is sent when due,
    /// or at once when the one before it ran late. A broken connection is replaced.
    async fn drive(
        &self,
        ctx: &FleetContext,
        (start_us, end_us): (u64, u64),
        stop: &CancellationToken,
        mut record: impl FnMut(u64, u64, bool),
    ) {
        let mut rng = StdRng::seed_from_u64(self.seed);
        let interval = 1e6 / self.plan.rate;
        let Some(mut link) = ctx.connect("bystander", stop).await else {
            return;
        };
        for i in 0u64.. {
            let due = start_us + (i as f64 * interval) as u64;
            if due >= end_us || !sleep_or_stop(ctx.clock.until(due), stop).await {
                break;
            }
            let id = rng.random_range(1..=i64::from(self.plan.rows));
            let outcome = statement(&mut *link, i % 2 == 0, id).await;
            record(due, ctx.clock.now_us(), outcome.is_ok());
            if let Err(e) = outcome
                && e.is_connection()
            {
                link = match ctx.connect("bystander", stop).await {
                    Some(l) => l,
                    None => return,
                };
            }
        }
        link.close().await;
    }
}

/// One statement: a read, or an update.
async fn statement(
    link: &mut dyn Link,
    read: bool,
    id: i64,
) -> Result<(), crate::backend::BackendError> {
    let Some(bystander) = link.bystander() else {
        return Err(crate::backend::BackendError::unsupported(
            "a bystander",
            "this engine",
        ));
    };
    if read {
        bystander.bystander_read(id).await
    } else {
        bystander.bystander_update(id).await
    }
}
