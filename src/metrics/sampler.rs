//! The database sampler: on its own connection, once per interval, a sample of what the
//! backend says about the queue (jobs by status, tuples, sizes, vacuum counters, commits,
//! WAL, the xmin horizon, the run's wait events), and at the start of every phase the claim's
//! measured cost (run once and undone).
//!
//! Its queries add load of their own: a scan of the queue table per full sample (jobs by
//! status) and one claim per phase. A failed sample is skipped, never retried at once; a
//! broken connection is replaced at the next tick.

use super::event::Event;
use crate::backend::{Backend, Link};
use crate::clock::RunClock;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub struct DbSampler {
    pub backend: Arc<dyn Backend>,
    pub clock: RunClock,
    pub events: crate::metrics::EventSink,
    pub interval: Duration,
    /// When to probe the claim (run-clock µs) and what to call the probe, in time order.
    pub probes: Vec<(u64, String)>,
}

impl DbSampler {
    /// Samples until `stop` is cancelled.
    pub async fn run(mut self, stop: CancellationToken) {
        let mut tick = tokio::time::interval(self.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut conn: Option<Box<dyn Link>> = None;
        // The first sample, and the first after each claim probe (phase boundaries), count
        // every status; the others only the waiting jobs, so their cost does not grow with
        // the table.
        let mut full = true;
        self.probes.reverse();
        loop {
            let next_probe = self.probes.last().map(|(at, _)| self.clock.until(*at));
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = tick.tick() => {}
                _ = tokio::time::sleep(next_probe.unwrap_or(Duration::MAX)), if next_probe.is_some() => {}
            }
            if conn.is_none() {
                conn = self.backend.connect("sampler").await.ok();
            }
            let Some(c) = conn.as_mut() else { continue };
            let result = match self.probes.last() {
                Some((at, _)) if self.clock.now_us() >= *at => {
                    let (_, label) = self.probes.pop().expect("just looked");
                    full = true;
                    let probed = match c.planner() {
                        Some(planner) => planner.probe_claim().await,
                        None => continue,
                    };
                    probed.map(|probe| Event::ClaimProbe {
                        at_us: self.clock.now_us(),
                        label,
                        probe,
                    })
                }
                _ => c
                    .sample(std::mem::take(&mut full))
                    .await
                    .map(|s| Event::DbSample {
                        at_us: self.clock.now_us(),
                        sample: Box::new(s),
                    }),
            };
            match result {
                Ok(event) => {
                    let _ = self.events.send(event);
                }
                Err(e) if e.is_connection() => conn = None,
                Err(_) => {}
            }
        }
        if let Some(c) = conn {
            c.close().await;
        }
    }
}
