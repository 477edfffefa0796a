//! Fleets: the producers that enqueue on a schedule and the SKIP LOCKED consumers that work
//! the queue. Fleets only act and report: each action is stamped on the run clock and sent
//! as an [`Event`] to the recorder; they never compute figures or format output.

pub mod consumer;
pub mod handler;
pub mod jobs;
pub mod process;
pub mod producer;
pub mod reaper;
pub mod registry;
pub mod schedule;

use crate::clock::RunClock;
use crate::db::RunSchema;
use crate::db::{Conn, ServerOptions};
use crate::metrics::Event;
use crate::queue::{Queue, WakeUp};
use sqlx::postgres::{PgListener, PgPoolOptions};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

/// What every fleet member needs: the queue's SQL, where to connect, the clock to stamp
/// events with and where to send them.
#[derive(Clone)]
pub struct FleetContext {
    pub queue: Queue,
    pub schema: RunSchema,
    pub clock: RunClock,
    pub events: UnboundedSender<Event>,
}

impl FleetContext {
    pub fn emit(&self, event: Event) {
        // The recorder outlives every fleet; a send can only fail after it is gone.
        let _ = self.events.send(event);
    }

    /// Connects as `name` (its `application_name`, which `kill_backends` targets), retrying
    /// with backoff (50 ms doubling to 1 s) until it works or `stop` is cancelled. Each fleet
    /// member owns one connection, as the seed's workers do.
    pub async fn connect(&self, name: &str, stop: &CancellationToken) -> Option<Conn> {
        let mut delay = Duration::from_millis(50);
        loop {
            if stop.is_cancelled() {
                return None;
            }
            match self.schema.connect_as(name).await {
                Ok(c) => return Some(c),
                Err(e) => {
                    tracing::debug!("{name}: cannot connect, retrying in {delay:?}: {e:#}");
                    if !sleep_or_stop(delay, stop).await {
                        return None;
                    }
                    delay = (delay * 2).min(Duration::from_secs(1));
                }
            }
        }
    }
}

/// How an idle worker is woken before its poll interval is up: by notifications on the
/// run's channel (`notify` variants), each one waking one idle worker. Without a listener
/// (poll variants) idle workers only sleep.
#[derive(Clone, Default)]
pub struct WakeUps(Option<Arc<Notify>>);

impl WakeUps {
    /// Starts the listener when the queue's variant wakes workers up; it ends with `stop`.
    pub fn start(ctx: &FleetContext, stop: &CancellationToken) -> WakeUps {
        if ctx.queue.variant().wake_up != WakeUp::Notify {
            return WakeUps(None);
        }
        let notify = Arc::new(Notify::new());
        tokio::spawn(listen(ctx.clone(), notify.clone(), stop.clone()));
        WakeUps(Some(notify))
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

/// LISTENs on the run's channel (on a connection of its own, `listener`) and turns every
/// notification into one wake-up. Reconnects after a lost connection; notifications sent
/// meanwhile are lost, and the poll covers for them.
async fn listen(ctx: FleetContext, notify: Arc<Notify>, stop: CancellationToken) {
    // LISTEN/NOTIFY variants run on PostgreSQL only (the plan says so).
    let ServerOptions::Postgres(options) = ctx.schema.options() else {
        return;
    };
    let options = options
        .clone()
        .application_name(&ctx.schema.application_name("listener"));
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .connect_lazy_with(options);
    while !stop.is_cancelled() {
        let mut listener = match PgListener::connect_with(&pool).await {
            Ok(l) => l,
            Err(e) => {
                tracing::debug!("listener: cannot connect, retrying: {e}");
                sleep_or_stop(Duration::from_millis(200), &stop).await;
                continue;
            }
        };
        if let Err(e) = listener.listen(ctx.queue.channel()).await {
            tracing::debug!("listener: LISTEN failed, retrying: {e}");
            sleep_or_stop(Duration::from_millis(200), &stop).await;
            continue;
        }
        loop {
            tokio::select! {
                n = listener.recv() => match n {
                    Ok(_) => notify.notify_one(),
                    Err(e) => {
                        tracing::debug!("listener: {e}");
                        break;
                    }
                },
                _ = stop.cancelled() => break,
            }
        }
    }
    pool.close().await;
}

/// Sleeps for `d`; returns false if `stop` was cancelled first.
pub async fn sleep_or_stop(d: Duration, stop: &CancellationToken) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(d) => true,
        _ = stop.cancelled() => false,
    }
}

/// Whether a commit that failed with `e` may have committed after all: any connection error.
/// A server-side termination (57P01, MariaDB's 70100) is no proof of a rollback: the
/// `COMMIT` can finish just before the session is killed, and in `COMMIT; BEGIN` the
/// termination arrives on the `BEGIN`. The table settles such outcomes after the run.
pub fn outcome_unknown(e: &sqlx::Error) -> bool {
    is_connection_error(e)
}

/// Whether retrying cannot help: the server rejects the statement itself (SQLSTATE classes
/// 22 data, 23 integrity, 42 syntax or access, 0A not supported, 28 authorization, 3D/3F no
/// such database or schema). Connection loss, shutdowns, serialization failures, deadlocks,
/// lock and statement timeouts and resource shortages are transient.
pub fn is_permanent(e: &sqlx::Error) -> bool {
    let sqlx::Error::Database(db) = e else {
        return false;
    };
    let code = db.code().unwrap_or_default();
    ["22", "23", "42", "0A", "28", "3D", "3F"]
        .iter()
        .any(|class| code.starts_with(class))
}

/// The server's message and SQLSTATE on one line, as it was (for a fatal error's report).
pub fn error_line(e: &sqlx::Error) -> String {
    let text = match e {
        sqlx::Error::Database(db) => {
            format!(
                "{} (SQLSTATE {})",
                db.message(),
                db.code().unwrap_or_default()
            )
        }
        other => other.to_string(),
    };
    text.lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(300)
        .collect()
}

/// Whether an error means the connection is unusable and must be replaced.
pub fn is_connection_error(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => {
            let code = db.code().unwrap_or_default();
            // 08xxx connection exceptions, 57P0x operator intervention (terminated,
            // shutdown, idle session timeout), 25P03/25P04 the session ended for idling in
            // or overrunning a transaction (both FATAL); MariaDB: 70100, the session was
            // killed (KILL CONNECTION).
            code.starts_with("08")
                || code.starts_with("57P")
                || ["25P03", "25P04", "70100"].contains(&code.as_ref())
        }
        _ => false,
    }
}

/// An error message short enough to group by: the first line, without ids or numbers.
pub fn error_kind(e: &sqlx::Error) -> String {
    let text = match e {
        sqlx::Error::Database(db) => {
            format!("{} ({})", db.message(), db.code().unwrap_or_default())
        }
        other => other.to_string(),
    };
    let line = text.lines().next().unwrap_or("").to_string();
    line.chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .take(160)
        .collect()
}
