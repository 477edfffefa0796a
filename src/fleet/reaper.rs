//! The queue's periodic chores, each a loop on its own connection:
//!
//! - the stale-job reaper, the seed's cron job: every `interval` it returns jobs that have
//!   been `processing` for longer than `stale_after` to `pending`, and reports which. With
//!   the seed's worker (claim, work and complete in one transaction) a crashed worker's
//!   claim rolls back by itself, so the reaper finds nothing; it matters when claims are
//!   committed before the work runs.
//! - a design's ticker (rotation's truncation, as PgQ's daemon), once a second.

use super::{FleetContext, sleep_or_stop};
use crate::backend::{BackendError, Link};
use crate::metrics::Event;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Copy)]
pub struct StaleJobReaper {
    pub interval: Duration,
    pub stale_after: Duration,
    /// Count each reap as a failed attempt (the fix for the seed's retry-forever hole).
    pub count_as_attempt: bool,
}

/// A design's ticker: [`crate::backend::Work::tick`] every `every` (the design's).
#[derive(Debug, Clone, Copy)]
pub struct DesignTicker {
    pub every: Duration,
}

impl DesignTicker {
    /// Ticks until `stop` is cancelled.
    pub async fn run(self, ctx: FleetContext, stop: CancellationToken) {
        Chore::Tick.run(self.every, ctx, stop).await
    }
}

impl StaleJobReaper {
    /// Reaps every `interval` (the first time one interval after the start, like cron)
    /// until `stop` is cancelled.
    pub async fn run(self, ctx: FleetContext, stop: CancellationToken) {
        Chore::Reap(self).run(self.interval, ctx, stop).await
    }
}

enum Chore {
    Reap(StaleJobReaper),
    Tick,
}

impl Chore {
    fn role(&self) -> &'static str {
        match self {
            Chore::Reap(_) => "reaper",
            Chore::Tick => "ticker",
        }
    }

    /// Does the chore every `interval`; an error is reported as the chore's, and a lost
    /// connection is made again at the next round.
    async fn run(self, interval: Duration, ctx: FleetContext, stop: CancellationToken) {
        let mut conn = None;
        while sleep_or_stop(interval, &stop).await {
            if conn.is_none() {
                conn = ctx.connect(self.role(), &stop).await;
            }
            let Some(c) = conn.as_mut() else { break };
            if let Err(e) = self.once(c.as_mut(), &ctx).await {
                ctx.emit(Event::WorkerError {
                    at_us: ctx.clock.now_us(),
                    error: format!("{}: {}", self.role(), e.kind()),
                    jobs: Vec::new(),
                    in_doubt: false,
                });
                if e.is_connection() {
                    conn = None;
                }
            }
        }
        if let Some(c) = conn {
            c.close().await;
        }
    }

    async fn once(&self, c: &mut dyn Link, ctx: &FleetContext) -> Result<(), BackendError> {
        match self {
            Chore::Reap(r) => {
                let jobs = c.reap(r.stale_after, r.count_as_attempt).await?;
                ctx.emit(Event::Reaped {
                    at_us: ctx.clock.now_us(),
                    jobs,
                    counted: r.count_as_attempt,
                });
            }
            Chore::Tick => c.tick().await?,
        }
        Ok(())
    }
}
