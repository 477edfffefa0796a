//! The queue-depth sampler: once a second, on its own connection, counts `pending` rows and
//! reports them as an event. Its query uses the variant's partial index, so it adds one
//! cheap index scan per second to the load.

use super::event::Event;
use crate::clock::RunClock;
use crate::queue::Queue;
use sqlx::postgres::PgConnection;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

pub struct QueueDepthSampler {
    pub queue: Queue,
    pub clock: RunClock,
    pub events: UnboundedSender<Event>,
    pub interval: Duration,
}

impl QueueDepthSampler {
    /// Samples until `stop` is cancelled. A failed sample is skipped (the timeline shows a
    /// gap), not retried: the sampler must never add load of its own during a fault.
    pub async fn run(self, mut conn: PgConnection, stop: CancellationToken) -> PgConnection {
        let mut tick = tokio::time::interval(self.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = tick.tick() => {}
            }
            if let Ok(pending) = self.queue.pending_count(&mut conn).await {
                let _ = self.events.send(Event::QueueDepth {
                    at_us: self.clock.now_us(),
                    pending,
                });
            }
        }
        conn
    }
}
