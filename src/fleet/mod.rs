//! Fleets: the producers that enqueue on a schedule and the SKIP LOCKED consumers that work
//! the queue. Fleets only act and report: each action is stamped on the run clock and sent
//! as an [`Event`] to the recorder; they never compute figures or format output. They reach
//! the queue only through the backend seam (`backend::Backend`, `backend::Link`).

pub mod bystander;
pub mod consumer;
pub mod external;
pub mod handler;
pub mod jobs;
pub mod pacer;
pub mod process;
pub mod producer;
pub mod reaper;
pub mod registry;
pub mod schedule;
pub mod sleep;

use crate::backend::{Backend, Link};
use crate::clock::RunClock;
use crate::metrics::{Event, EventSink};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// What every fleet member needs: the queue, the clock to stamp events with and where to
/// send them.
#[derive(Clone)]
pub struct FleetContext {
    pub backend: Arc<dyn Backend>,
    pub clock: RunClock,
    pub events: EventSink,
}

impl FleetContext {
    pub fn emit(&self, event: Event) {
        // The recorder outlives every fleet; a send can only fail after it is gone.
        let _ = self.events.send(event);
    }

    /// Connects as `name` (its name on the server, which `kill_backends` targets), retrying
    /// with backoff (50 ms doubling to 1 s) until it works or `stop` is cancelled. Each fleet
    /// member owns one connection, as the seed's workers do.
    pub async fn connect(&self, name: &str, stop: &CancellationToken) -> Option<Box<dyn Link>> {
        let mut delay = Duration::from_millis(50);
        loop {
            if stop.is_cancelled() {
                return None;
            }
            match self.backend.connect(name).await {
                Ok(c) => return Some(c),
                Err(e) => {
                    tracing::debug!("{name}: cannot connect, retrying in {delay:?}: {e}");
                    if !sleep_or_stop(delay, stop).await {
                        return None;
                    }
                    delay = (delay * 2).min(Duration::from_secs(1));
                }
            }
        }
    }
}

/// How an idle worker is woken before its poll interval is up: by the backend's
/// announcements of new jobs (designs that make them), each one waking one idle worker.
/// Without them idle workers only sleep.
#[derive(Clone, Default)]
pub struct WakeUps(Option<Arc<Notify>>);

impl WakeUps {
    /// Starts listening when the queue's design announces jobs; it ends with `stop`.
    pub fn start(ctx: &FleetContext, stop: &CancellationToken) -> WakeUps {
        WakeUps(ctx.backend.wake_ups(stop))
    }

    /// Waits `poll` after an empty claim, or less if a job is announced; false if `stop`
    /// was cancelled first.
    pub async fn idle(&self, poll: Duration, stop: &CancellationToken) -> bool {
        match &self.0 {
            None => sleep_or_stop(poll, stop).await,
            Some(notify) => tokio::select! {
                _ = tokio::time::sleep(poll) => true,
                _ = notify.notified() => true,
                _ = stop.cancelled() => false,
            },
        }
    }
}

/// Sleeps for `d`; returns false if `stop` was cancelled first.
pub async fn sleep_or_stop(d: Duration, stop: &CancellationToken) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(d) => true,
        _ = stop.cancelled() => false,
    }
}

/// A worker process's end, as words: `SIGKILL`, `exit status 1`.
pub(crate) fn exit_cause(status: std::io::Result<std::process::ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Ok(s) => match s.signal() {
            Some(sig) => nix::sys::signal::Signal::try_from(sig)
                .map_or(format!("signal {sig}"), |s| s.as_str().to_string()),
            None => format!("exit status {}", s.code().unwrap_or(-1)),
        },
        Err(e) => format!("lost: {e}"),
    }
}
