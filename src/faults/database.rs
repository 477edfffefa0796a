//! Faults on the database: terminated sessions, a restarted server, a held cleanup horizon,
//! long REPEATABLE READ readers, and held connections. Each acts through a connection of its
//! own, on the backend seam's fault operations.

use super::Job;
use crate::backend::engine::ShutdownMode;
use crate::backend::{BackendError, Link};
use crate::fleet::sleep_or_stop;
use crate::metrics::Event;
use crate::scenario::{BackendTarget, ClaimMode};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long the "after" probe of a hold waits for the horizon to pass what was held.
const HORIZON_WAIT: Duration = Duration::from_secs(5);

/// A fault whose capability the engine's links lack (validation refuses such a scenario from
/// the engine's facts first, so only a caller that skipped it meets this).
fn absent(fault: &str) -> BackendError {
    BackendError::unsupported(fault, "this engine")
}

async fn connect(job: &Job, role: &str) -> Option<Box<dyn Link>> {
    match job.ctx.backend.connect(role).await {
        Ok(c) => Some(c),
        Err(e) => {
            job.record(job.now(), job.now(), 0, format!("could not connect: {e}"));
            None
        }
    }
}

pub(super) async fn kill_backends(job: &Job, target: BackendTarget, count: u32) {
    let at = job.now();
    let Some(mut conn) = connect(job, "fault").await else {
        return;
    };
    let roles: &[&str] = match target {
        BackendTarget::Workers => &["worker-"],
        BackendTarget::Producers => &["producer-"],
        BackendTarget::All => &["worker-", "producer-"],
    };
    let ended = match conn.sessions() {
        Some(sessions) => sessions.terminate_sessions(roles, count).await,
        None => Err(absent("kill_backends")),
    };
    match ended {
        Ok((how, n)) => job.record(
            at,
            at,
            n,
            format!("{how} on {n} {target:?} backend(s)").to_lowercase(),
        ),
        Err(e) => job.record(at, at, 0, format!("terminating sessions failed: {e}")),
    }
    conn.close().await;
}

pub(super) async fn restart_server(job: &Job, mode: ShutdownMode, down_for: Duration) {
    let at = job.now();
    let detail = format!(
        "{mode:?} shutdown, down {}",
        humantime::format_duration(down_for)
    )
    .to_lowercase();
    let Some(server) = &job.ctx.server else {
        job.record(
            at,
            at,
            0,
            format!("{detail}; failed: the run has no server"),
        );
        return;
    };
    match server
        .restart(mode, down_for, job.ctx.startup_timeout)
        .await
    {
        Ok(()) => job.record(
            at,
            job.now(),
            1,
            format!("{detail}; accepting connections again"),
        ),
        Err(e) => job.record(at, job.now(), 0, format!("{detail}; failed: {e:#}")),
    }
}

async fn probe(job: &Job, conn: &mut dyn Link, label: &str, clean_up: bool) {
    if clean_up
        && let Some(vacuum) = conn.vacuum()
        && let Err(e) = vacuum.clean_up().await
    {
        job.record(job.now(), job.now(), 0, format!("cleanup failed: {e}"));
    }
    if let Ok(stats) = conn.table_stats().await {
        job.emit(Event::TableProbe {
            at_us: job.now(),
            label: label.into(),
            stats,
        });
    }
}

/// Holds a transaction open for the whole phase, pinning what MVCC may clean up (on
/// PostgreSQL the xmin horizon: VACUUM can remove nothing newer; on MariaDB a read view:
/// InnoDB's purge can remove no undo newer, so the history list grows). Probes the queue
/// table before, at the end of the hold and after releasing it (after a cleanup where the
/// engine cleans up on demand, the last one once the horizon has passed what was held).
pub(super) async fn hold_xmin(job: &Job, stop: &CancellationToken) {
    let at = job.now();
    let Some(mut probe_conn) = connect(job, "fault").await else {
        return;
    };
    let Some(mut holder) = connect(job, "fault-xmin").await else {
        return;
    };
    let words = job.ctx.engine.words();
    probe(job, &mut *probe_conn, "before", false).await;
    let held = match holder.mvcc() {
        Some(mvcc) => mvcc.hold_horizon().await,
        None => Err(absent("idle_in_transaction")),
    };
    let mut detail = match &held {
        Ok(x) => format!("xid {x} held open"),
        Err(e) => format!("could not open the transaction: {e}"),
    };
    sleep_or_stop(job.ctx.clock.until(job.end_us), stop).await;
    probe(job, &mut *probe_conn, words.while_held, true).await;
    holder.recover(ClaimMode::InTransaction).await;
    holder.close().await;
    let released = job.now();
    if let Ok(xid) = held
        && let Some(mvcc) = probe_conn.mvcc()
        && let Some(still) = mvcc.await_horizon(xid, HORIZON_WAIT, stop).await
    {
        detail += &format!(
            "; {still} session(s) still had a snapshot or transaction from before the \
             release {}s later: the after probe saw the horizon held",
            HORIZON_WAIT.as_secs()
        );
    }
    probe(job, &mut *probe_conn, words.once_released, true).await;
    probe_conn.close().await;
    job.record(at, released, held.is_ok() as u64, detail);
}

/// Keeps autovacuum off the queue table until the fault ends, then runs the VACUUM
/// autovacuum would have run (paced as it paces its own) and lets autovacuum back on. On
/// Ctrl-C autovacuum is let back on without the VACUUM.
pub(super) async fn delay_vacuum(job: &Job, stop: &CancellationToken) {
    let at = job.now();
    let Some(mut conn) = connect(job, "fault-vacuum").await else {
        return;
    };
    let table = job.ctx.backend.design().table.clone();
    let Some(vacuum) = conn.vacuum() else {
        job.record(at, at, 0, absent("delay_vacuum").to_string());
        conn.close().await;
        return;
    };
    if let Err(e) = vacuum.hold_autovacuum(true).await {
        job.record(
            at,
            at,
            0,
            format!("could not keep autovacuum off {table}: {e}"),
        );
        conn.close().await;
        return;
    }
    sleep_or_stop(job.ctx.clock.until(job.end_us), stop).await;
    let released = job.now();
    let mut detail = format!(
        "autovacuum kept off {table} for {:.0} s",
        released.saturating_sub(at) as f64 / 1e6
    );
    if !stop.is_cancelled() {
        detail += &match vacuum.vacuum_as_autovacuum().await {
            Ok(()) => format!(
                "; then one VACUUM (ANALYZE) paced as autovacuum's took {:.1} s",
                job.now().saturating_sub(released) as f64 / 1e6
            ),
            Err(e) => format!("; then the VACUUM failed: {e}"),
        };
    }
    detail += &match vacuum.hold_autovacuum(false).await {
        Ok(()) => "; autovacuum back on".to_string(),
        Err(e) => format!("; autovacuum could not be let back on: {e}"),
    };
    conn.close().await;
    job.record(at, released, 1, detail);
}

/// One ANALYZE of the queue table, on a connection of its own.
pub(super) async fn analyze(job: &Job) {
    let at = job.now();
    let Some(mut conn) = connect(job, "fault-analyze").await else {
        return;
    };
    let table = job.ctx.backend.design().table.clone();
    let analyzed = match conn.planner() {
        Some(planner) => planner.analyze().await,
        None => Err(absent("analyze")),
    };
    let detail = match analyzed {
        Ok(()) => format!(
            "ANALYZE of {table} took {:.0} ms",
            job.now().saturating_sub(at) as f64 / 1e3
        ),
        Err(e) => format!("ANALYZE of {table} failed: {e}"),
    };
    conn.close().await;
    job.record(at, job.now(), 1, detail);
}

/// `count` REPEATABLE READ transactions, each scanning the queue table every 100 ms for the
/// whole phase on one snapshot.
pub(super) async fn active_readers(job: &Job, count: u32, stop: &CancellationToken) {
    let at = job.now();
    let mut readers = tokio::task::JoinSet::new();
    for i in 0..count {
        let Some(mut conn) = connect(job, &format!("fault-reader-{i}")).await else {
            continue;
        };
        let (stop, end_us, clock) = (stop.clone(), job.end_us, job.ctx.clock);
        readers.spawn(async move {
            let mut scans = 0u64;
            if let Some(reader) = conn.readers()
                && reader.begin_snapshot().await.is_ok()
            {
                while clock.now_us() < end_us && !stop.is_cancelled() {
                    if reader.scan().await.is_err() {
                        break;
                    }
                    scans += 1;
                    sleep_or_stop(Duration::from_millis(100), &stop).await;
                }
                conn.recover(ClaimMode::InTransaction).await;
            }
            conn.close().await;
            scans
        });
    }
    let (started, mut scans) = (readers.len() as u64, 0);
    while let Some(r) = readers.join_next().await {
        scans += r.unwrap_or(0);
    }
    job.record(
        at,
        job.now(),
        started,
        format!(
            "{started} REPEATABLE READ reader(s), {scans} scans of {}",
            job.ctx.backend.design().table
        ),
    );
}

/// Opens up to `connections` idle connections and holds them for the whole phase.
pub(super) async fn hold_connections(job: &Job, connections: u32, stop: &CancellationToken) {
    let at = job.now();
    let mut held = Vec::new();
    let mut refused = None;
    for i in 0..connections {
        match job.ctx.backend.connect(&format!("fault-idle-{i}")).await {
            Ok(c) => held.push(c),
            Err(e) => {
                refused = Some(e.to_string());
                break;
            }
        }
    }
    sleep_or_stop(job.ctx.clock.until(job.end_us), stop).await;
    let opened = held.len() as u64;
    for c in held {
        c.close().await;
    }
    let detail = match refused {
        Some(e) => format!("held {opened} of {connections} idle connection(s); then refused: {e}"),
        None => format!("held {opened} idle connection(s)"),
    };
    job.record(at, job.now(), opened, detail);
}
