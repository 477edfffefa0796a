//! The queue-depth sampler: once a second, on its own connection, counts `pending` rows and
//! reports them as an event. Its query uses the variant's partial index, so it adds one
//! cheap index scan per second to the load.

use super::event::Event;
use crate::clock::RunClock;
use crate::db::RunSchema;
use crate::queue::Queue;
use sqlx::Connection;
use sqlx::postgres::PgConnection;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

pub struct QueueDepthSampler {
    pub queue: Queue,
    pub schema: RunSchema,
    pub clock: RunClock,
    pub events: UnboundedSender<Event>,
    pub interval: Duration,
}

impl QueueDepthSampler {
    /// Samples until `stop` is cancelled. A failed sample is skipped (the timeline shows no
    /// depth for that second), never retried at once: the sampler must not add load of its
    /// own during a fault. A broken connection is replaced at the next tick.
    pub async fn run(self, stop: CancellationToken) {
        let mut tick = tokio::time::interval(self.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut conn: Option<PgConnection> = None;
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = tick.tick() => {}
            }
            if conn.is_none() {
                conn = self.schema.connect_as("sampler").await.ok();
            }
            let Some(c) = conn.as_mut() else { continue };
            match self.queue.pending_count(c).await {
                Ok(pending) => {
                    let _ = self.events.send(Event::QueueDepth {
                        at_us: self.clock.now_us(),
                        pending,
                    });
                }
                Err(e) if crate::fleet::is_connection_error(&e) => conn = None,
                Err(_) => {}
            }
        }
        if let Some(c) = conn {
            c.close().await.ok();
        }
    }
}
