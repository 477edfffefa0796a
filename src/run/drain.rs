//! The drain that ends a step: the consumers finish what was committed, bounded by the
//! timeout, while outcomes in doubt are settled from the queue. Drained is both views' word:
//! the ledger has every job finished, and the queue holds nothing waiting or in flight (a
//! broker may still hold a copy of a finished job whose acknowledgement it never got, which
//! would run again). Rules: the drain asks on two connections of its own, one that settles
//! (never reading waiting messages: `SETTLE_ROLE`) and one that looks whether the queue is
//! empty; each is opened when first needed and kept for the whole drain (a Kafka reader
//! walks only what was added since its last look), and dropped after an error so that the
//! next look opens another. A queue that cannot be asked counts as empty: the ledger's word
//! stands. When every job still open is in doubt (its worker died holding it) and the queue
//! has looked empty for [`DOUBT_SETTLES_AFTER`], the drain ends: a broker forgets a job its
//! dead worker acknowledged, and cannot say so while consumers are attached (RabbitMQ), so
//! the proof settles those jobs with the consumers stopped, instead of the drain waiting out
//! its timeout for them.

use crate::accounting;
use crate::backend::link::{Link, SETTLE_ROLE};
use crate::fleet::FleetContext;
use crate::metrics::LiveStats;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often the drain asks the queue about in-doubt outcomes, and whether it is empty.
const SETTLE_EVERY: Duration = Duration::from_millis(500);

/// How long the queue must look empty, with only in-doubt jobs open, before the drain leaves
/// them to the proof: longer than a broker takes to give a dead consumer's delivery back.
const DOUBT_SETTLES_AFTER: Duration = Duration::from_secs(2);

/// Returns how long the drain took and whether it timed out.
pub(super) async fn drain(
    timeout: Duration,
    ctx: &FleetContext,
    live: &LiveStats,
    stop_load: &CancellationToken,
    shutdown: &CancellationToken,
) -> (f64, bool) {
    let clock = ctx.clock;
    let drain_start = clock.now_us();
    let every = SETTLE_EVERY.as_micros() as u64;
    let (mut last_settle, mut last_look) = (0, 0);
    let mut settler = Kept::new(ctx, SETTLE_ROLE);
    let mut looker = Kept::new(ctx, "drain");
    // Since when only in-doubt jobs were open and the queue looked empty.
    let mut empty_since: Option<u64> = None;
    let timed_out = loop {
        if stop_load.is_cancelled() {
            break false;
        }
        let now = clock.now_us();
        let (drained, in_doubt) = (live.drained(), only_in_doubt(live));
        if !in_doubt {
            empty_since = None;
        }
        if (drained || in_doubt) && now - last_look > every {
            last_look = now;
            let empty = looker.queue_is_empty().await;
            if empty && drained {
                break false;
            }
            empty_since = empty.then(|| empty_since.unwrap_or(now));
            let settles = DOUBT_SETTLES_AFTER.as_micros() as u64;
            if empty_since.is_some_and(|since| now - since >= settles) {
                break false;
            }
        }
        if now - drain_start > timeout.as_micros() as u64 {
            break true;
        }
        if now - last_settle > every {
            last_settle = now;
            settler.settle_in_doubt(live).await;
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(20)) => {}
            _ = shutdown.cancelled() => {}
        }
    };
    settler.close().await;
    looker.close().await;
    ((clock.now_us() - drain_start) as f64 / 1e6, timed_out)
}

/// Every job still open is in doubt: its worker died holding it, and no one has said since
/// how it ended.
fn only_in_doubt(live: &LiveStats) -> bool {
    let s = live.snapshot();
    s.producers_stopped && s.outstanding > 0 && s.outstanding <= live.unresolved().1.len() as i64
}

/// One connection of the drain's, in `role`, kept between its looks.
struct Kept<'a> {
    ctx: &'a FleetContext,
    role: &'static str,
    conn: Option<Box<dyn Link>>,
}

impl<'a> Kept<'a> {
    fn new(ctx: &'a FleetContext, role: &'static str) -> Kept<'a> {
        Kept {
            ctx,
            role,
            conn: None,
        }
    }

    /// The connection, opened if there is none; `None` when the queue cannot be reached.
    async fn link(&mut self) -> Option<&mut (dyn Link + 'static)> {
        if self.conn.is_none() {
            self.conn = self.ctx.backend.connect(self.role).await.ok();
        }
        self.conn.as_deref_mut()
    }

    /// Whether the queue itself holds no job waiting or in flight.
    async fn queue_is_empty(&mut self) -> bool {
        let Some(conn) = self.link().await else {
            return true;
        };
        match conn.status_counts().await {
            Ok(counts) => counts
                .iter()
                .all(|(status, n)| *n == 0 || !matches!(status.as_str(), "pending" | "processing")),
            Err(_) => {
                self.drop_link().await;
                true
            }
        }
    }

    /// Asks the queue about the in-doubt outcomes the recorder listed, and reports what it
    /// says.
    async fn settle_in_doubt(&mut self, live: &LiveStats) {
        let (keys, jobs) = live.unresolved();
        if keys.is_empty() && jobs.is_empty() {
            return;
        }
        let at_us = self.ctx.clock.now_us();
        let Some(conn) = self.link().await else {
            return;
        };
        match accounting::settle(conn, &keys, &jobs, at_us, false).await {
            Ok(events) => events.into_iter().for_each(|e| self.ctx.emit(e)),
            Err(_) => self.drop_link().await,
        }
    }

    async fn drop_link(&mut self) {
        if let Some(conn) = self.conn.take() {
            conn.close().await;
        }
    }

    async fn close(mut self) {
        self.drop_link().await;
    }
}
