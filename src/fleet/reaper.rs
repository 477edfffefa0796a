//! The stale-job reaper: the seed's cron job, as a loop on its own connection. Every
//! `interval` it returns jobs that have been `processing` for longer than `stale_after` to
//! `pending`, and reports which.
//!
//! With the seed's worker (claim, work and complete in one transaction) a crashed worker's
//! claim rolls back by itself, so the reaper finds nothing; it matters when claims are
//! committed before the work runs.

use super::{FleetContext, sleep_or_stop};
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

impl StaleJobReaper {
    /// Reaps every `interval` (the first time one interval after the start, like cron)
    /// until `stop` is cancelled.
    pub async fn run(self, ctx: FleetContext, stop: CancellationToken) {
        let mut conn = None;
        while sleep_or_stop(self.interval, &stop).await {
            if conn.is_none() {
                conn = ctx.connect("reaper", &stop).await;
            }
            let Some(c) = conn.as_mut() else { break };
            match c.reap(self.stale_after, self.count_as_attempt).await {
                Ok(jobs) => ctx.emit(Event::Reaped {
                    at_us: ctx.clock.now_us(),
                    jobs,
                    counted: self.count_as_attempt,
                }),
                Err(e) => {
                    ctx.emit(Event::WorkerError {
                        at_us: ctx.clock.now_us(),
                        error: format!("reaper: {}", e.kind()),
                        jobs: Vec::new(),
                        in_doubt: false,
                    });
                    if e.is_connection() {
                        conn = None;
                    }
                }
            }
        }
        if let Some(c) = conn {
            c.close().await;
        }
    }
}
