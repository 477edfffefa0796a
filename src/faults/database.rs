//! Faults on the database: terminated backends, a restarted server, a pinned xmin horizon,
//! long REPEATABLE READ readers, and held connections.

use super::Job;
use crate::db::{Conn, MariadbSessions};
use crate::fleet::sleep_or_stop;
use crate::metrics::Event;
use crate::scenario::{BackendTarget, ShutdownMode};
use rand::seq::SliceRandom;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Terminates up to $2 backends of this run whose `application_name` matches one of the
/// patterns $1, chosen at random.
const TERMINATE_BACKENDS: &str = "
SELECT pg_terminate_backend(pid)
FROM  (SELECT pid
       FROM   pg_stat_activity
       WHERE  datname = current_database()
         AND  application_name LIKE ANY($1::text[])
         AND  pid <> pg_backend_pid()
       ORDER  BY random()
       LIMIT  $2) AS victims";

/// MariaDB: the run's sessions other than the asking one (the run has a database of its own).
const MARIADB_SESSIONS: &str = "
SELECT ID
FROM   information_schema.PROCESSLIST
WHERE  DB = DATABASE() AND ID <> CONNECTION_ID()";

/// The PostgreSQL connection of a fault only PostgreSQL has (the plan refuses it on MariaDB).
fn postgres_only(conn: &mut Conn) -> sqlx::Result<&mut sqlx::postgres::PgConnection> {
    conn.postgres()
        .ok_or_else(|| sqlx::Error::Protocol("this fault runs on PostgreSQL only".into()))
}

async fn connect(job: &Job, role: &str) -> Option<Conn> {
    match job.ctx.schema.connect_as(role).await {
        Ok(c) => Some(c),
        Err(e) => {
            job.record(job.now(), job.now(), 0, format!("could not connect: {e:#}"));
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
    let (how, result) = match &mut conn {
        Conn::Postgres(c) => {
            let patterns: Vec<String> = roles
                .iter()
                .map(|role| format!("{}%", job.ctx.schema.application_name(role)))
                .collect();
            let done: Result<Vec<bool>, _> = sqlx::query_scalar(TERMINATE_BACKENDS)
                .bind(&patterns)
                .bind(count as i64)
                .fetch_all(&mut *c)
                .await;
            let n = done.map(|d| d.iter().filter(|ok| **ok).count() as u64);
            ("pg_terminate_backend", n)
        }
        Conn::Mariadb(c) => ("KILL CONNECTION", kill_mariadb(job, c, roles, count).await),
    };
    match result {
        Ok(n) => job.record(
            at,
            at,
            n,
            format!("{how} on {n} {target:?} backend(s)").to_lowercase(),
        ),
        Err(e) => job.record(at, at, 0, format!("{how} failed: {e}")),
    }
    conn.close().await.ok();
}

/// MariaDB: `KILL CONNECTION` on up to `count` of the run's sessions in `roles`, chosen at
/// random. A session this process did not open is a worker process's.
async fn kill_mariadb(
    job: &Job,
    conn: &mut sqlx::mysql::MySqlConnection,
    roles: &[&str],
    count: u32,
) -> sqlx::Result<u64> {
    let ids: Vec<i64> = sqlx::query_scalar(MARIADB_SESSIONS)
        .fetch_all(&mut *conn)
        .await?;
    let ids = ids.into_iter().map(|id| id as u64);
    let prefixes: Vec<String> = roles
        .iter()
        .map(|role| job.ctx.schema.application_name(role))
        .collect();
    let mut victims: Vec<u64> = ids
        .filter(|id| match MariadbSessions::name_of(*id) {
            Some(name) => prefixes.iter().any(|p| name.starts_with(p.as_str())),
            None => roles.contains(&"worker-"),
        })
        .collect();
    victims.shuffle(&mut rand::rng());
    let mut killed = 0;
    for id in victims.into_iter().take(count as usize) {
        // `id` is an integer the server gave; KILL takes no bound parameter.
        let kill = sqlx::AssertSqlSafe(format!("KILL CONNECTION {id}"));
        if sqlx::raw_sql(kill).execute(&mut *conn).await.is_ok() {
            killed += 1;
        }
    }
    Ok(killed)
}

pub(super) async fn restart_server(job: &Job, mode: ShutdownMode, down_for: Duration) {
    let at = job.now();
    let result = job
        .ctx
        .server
        .restart(mode, down_for, job.ctx.startup_timeout)
        .await;
    let detail = format!(
        "{mode:?} shutdown, down {}",
        humantime::format_duration(down_for)
    )
    .to_lowercase();
    match result {
        Ok(()) => job.record(
            at,
            job.now(),
            1,
            format!("{detail}; accepting connections again"),
        ),
        Err(e) => job.record(at, job.now(), 0, format!("{detail}; failed: {e:#}")),
    }
}

async fn probe(job: &Job, conn: &mut Conn, label: &str, vacuum: bool) {
    if vacuum && let Err(e) = job.ctx.queue.vacuum(conn).await {
        job.record(job.now(), job.now(), 0, format!("VACUUM failed: {e}"));
    }
    if let Ok(stats) = job.ctx.queue.table_stats(conn).await {
        job.emit(Event::TableProbe {
            at_us: job.now(),
            label: label.into(),
            stats,
        });
    }
}

/// Holds a transaction open for the whole phase, pinning what MVCC may clean up: on
/// PostgreSQL a transaction with an XID (the xmin horizon: VACUUM can remove nothing newer),
/// on MariaDB a consistent snapshot (InnoDB's purge can remove no undo newer than its read
/// view, so the history list grows). Probes the queue table before, at the end of the hold
/// and after releasing it (on PostgreSQL each after a VACUUM, the second once the horizon
/// has passed the released XID; InnoDB purges by itself).
pub(super) async fn hold_xmin(job: &Job, stop: &CancellationToken) {
    let at = job.now();
    let Some(mut probe_conn) = connect(job, "fault").await else {
        return;
    };
    let Some(mut holder) = connect(job, "fault-xmin").await else {
        return;
    };
    let vacuum = holder.engine() == crate::scenario::Engine::Postgres;
    let (during, after) = if vacuum {
        ("during (VACUUM while held)", "after (VACUUM once released)")
    } else {
        (
            "during (purge blocked while held)",
            "after (purge once released)",
        )
    };
    probe(job, &mut probe_conn, "before", false).await;
    let xid = hold(&mut holder).await;
    let mut detail = match &xid {
        Ok(x) => format!("xid {x} held open"),
        Err(e) => format!("could not open the transaction: {e}"),
    };
    sleep_or_stop(job.ctx.clock.until(job.end_us), stop).await;
    probe(job, &mut probe_conn, during, vacuum).await;
    holder.execute("ROLLBACK").await.ok();
    holder.close().await.ok();
    let released = job.now();
    match (&mut probe_conn, &xid) {
        (Conn::Postgres(c), Ok(held)) => {
            if let Some(still) = wait_for_horizon(c, *held, stop).await {
                detail += &format!(
                    "; {still} session(s) still had a snapshot or transaction from before the \
                     release {}s later: the after probe saw the horizon held",
                    HORIZON_WAIT.as_secs()
                );
            }
        }
        // Nothing was held.
        (Conn::Postgres(_), Err(_)) => {}
        // InnoDB purges in the background: give it a moment to catch up.
        (Conn::Mariadb(_), _) => _ = sleep_or_stop(Duration::from_secs(1), stop).await,
    }
    probe(job, &mut probe_conn, after, vacuum).await;
    probe_conn.close().await.ok();
    job.record(at, released, xid.is_ok() as u64, detail);
}

/// The run's sessions whose snapshot or transaction is at least as old as the released XID
/// ($1, a `txid_current()` value). A statement that took its snapshot while the XID was held
/// keeps VACUUM's horizon there until it ends, so the "after" VACUUM waits for them.
const OLDER_THAN_RELEASED: &str = "
SELECT count(*)
FROM   pg_stat_activity
WHERE  datname = current_database()
  AND  pid <> pg_backend_pid()
  AND  (age(backend_xmin) >= age(($1 % 4294967296)::text::xid)
        OR age(backend_xid) >= age(($1 % 4294967296)::text::xid))";

/// How long the "after" probe waits for the horizon to pass the released XID.
const HORIZON_WAIT: Duration = Duration::from_secs(5);

/// Waits until no other session of the run's database holds a snapshot or transaction from
/// before the release; `Some(n)` when `n` still did after [`HORIZON_WAIT`] (or at a stop).
async fn wait_for_horizon(
    conn: &mut sqlx::postgres::PgConnection,
    held: i64,
    stop: &CancellationToken,
) -> Option<i64> {
    let deadline = tokio::time::Instant::now() + HORIZON_WAIT;
    loop {
        let still: i64 = sqlx::query_scalar(OLDER_THAN_RELEASED)
            .bind(held)
            .fetch_one(&mut *conn)
            .await
            .ok()?;
        if still == 0 {
            return None;
        }
        if tokio::time::Instant::now() >= deadline
            || !sleep_or_stop(Duration::from_millis(10), stop).await
        {
            return Some(still);
        }
    }
}

/// MariaDB: the transaction id of the session's own transaction.
const MARIADB_OWN_TRX: &str = "
SELECT CAST(trx_id AS SIGNED)
FROM   information_schema.INNODB_TRX
WHERE  trx_mysql_thread_id = CONNECTION_ID()";

/// Opens the holding transaction; returns its transaction id.
async fn hold(holder: &mut Conn) -> sqlx::Result<i64> {
    match holder {
        Conn::Postgres(h) => {
            sqlx::raw_sql("BEGIN").execute(&mut *h).await?;
            sqlx::query_scalar("SELECT txid_current()")
                .fetch_one(&mut *h)
                .await
        }
        Conn::Mariadb(h) => {
            sqlx::raw_sql("START TRANSACTION WITH CONSISTENT SNAPSHOT")
                .execute(&mut *h)
                .await?;
            sqlx::query_scalar(MARIADB_OWN_TRX).fetch_one(&mut *h).await
        }
    }
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
        // The table name is the variant's constant, not user input.
        let scan = format!("SELECT count(*) FROM {}", job.ctx.queue.variant().table);
        readers.spawn(async move {
            let mut scans = 0u64;
            if let Ok(c) = postgres_only(&mut conn)
                && sqlx::raw_sql("BEGIN ISOLATION LEVEL REPEATABLE READ")
                    .execute(&mut *c)
                    .await
                    .is_ok()
            {
                while clock.now_us() < end_us && !stop.is_cancelled() {
                    if sqlx::query(sqlx::AssertSqlSafe(scan.as_str()))
                        .execute(&mut *c)
                        .await
                        .is_err()
                    {
                        break;
                    }
                    scans += 1;
                    sleep_or_stop(Duration::from_millis(100), &stop).await;
                }
                sqlx::raw_sql("COMMIT").execute(&mut *c).await.ok();
            }
            conn.close().await.ok();
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
            job.ctx.queue.variant().table
        ),
    );
}

/// Opens up to `connections` idle connections and holds them for the whole phase.
pub(super) async fn hold_connections(job: &Job, connections: u32, stop: &CancellationToken) {
    let at = job.now();
    let mut held = Vec::new();
    let mut refused = None;
    for i in 0..connections {
        match job.ctx.schema.connect_as(&format!("fault-idle-{i}")).await {
            Ok(c) => held.push(c),
            Err(e) => {
                refused = Some(format!("{e:#}"));
                break;
            }
        }
    }
    sleep_or_stop(job.ctx.clock.until(job.end_us), stop).await;
    let opened = held.len() as u64;
    for c in held {
        c.close().await.ok();
    }
    let detail = match refused {
        Some(e) => format!("held {opened} of {connections} idle connection(s); then refused: {e}"),
        None => format!("held {opened} idle connection(s)"),
    };
    job.record(at, job.now(), opened, detail);
}
