//! PostgreSQL: the article's engine and every design. A queue lives in a schema of its own;
//! every connection of the run has it as `search_path` and an `application_name` of
//! `dbq-bench/<schema>/<role>`, so the run's sessions can be told apart in
//! `pg_stat_activity` (and targeted by `kill_backends`) even on a shared server.

mod bystand;
mod check;
mod designs;
mod disrupt;
mod facts;
mod inspect;
mod link;
mod outbox;
mod provider;

use super::error::BackendError;
use super::seam::{
    DesignError,
    Link,
};
use super::sql::Shared;
use super::sql::design::SqlDesign;
use super::sql::driver::SqlDriver;
use super::sql::queue::{Dialect, SqlEndpoint, SqlQueue};
use super::sql::server::{self, AuditTables};
use crate::backend::engine::EngineFacts;
use crate::backend::queue::QueuePlan;
use link::PgLink;
use sqlx::Postgres;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgListener, PgPoolOptions};
use sqlx::{AssertSqlSafe, ConnectOptions, Connection, Executor};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// This engine takes no settings of its own (the registry's `EngineSettings`).
pub type Settings = crate::backend::engine::NoSettings;

pub static DRIVER: SqlDriver<Pg> = SqlDriver::new();

/// Options every harness connection shares: a recognizable application name (so
/// `pg_stat_activity` shows which backends are ours) and no statement logging (sqlx would
/// otherwise time and log every statement: a load generator's statements are its
/// measurement, and that bookkeeping is CPU taken from the server it loads).
fn harness_options(options: PgConnectOptions) -> PgConnectOptions {
    options
        .application_name("dbq-bench")
        .disable_statement_logging()
}


/// A PostgreSQL server.
pub type PgEndpoint = SqlEndpoint<Pg>;

/// The harness's completion audit and status trigger, in PostgreSQL's dialect.
const AUDIT_TABLES: AuditTables = AuditTables {
    completion_audit: include_str!("../../../migrations/harness/0001_completion_audit.sql"),
    status_trigger: include_str!("../../../migrations/harness/0002_status_trigger.sql"),
};

/// Settings that shape a benchmark's results, recorded with every run.
const KEY_SETTINGS: &str = "
SELECT name, setting || COALESCE(unit, '')
FROM   pg_settings
WHERE  name IN ('shared_buffers', 'synchronous_commit', 'fsync', 'wal_level', 'max_connections', 'work_mem',
                'autovacuum', 'autovacuum_naptime', 'autovacuum_vacuum_scale_factor', 'autovacuum_vacuum_threshold',
                'autovacuum_vacuum_cost_limit', 'idle_in_transaction_session_timeout', 'checkpoint_timeout', 'max_wal_size')
ORDER  BY name";

/// PostgreSQL's side of the shared SQL queue: a schema as the namespace, entered by
/// `search_path`; sessions known by `application_name`; LISTEN for the notify design.
pub struct Pg;

/// A queue installed in a schema of its own.
pub type PgQueue = SqlQueue<Pg>;

impl Dialect for Pg {
    type Db = Postgres;
    const FACTS: &'static EngineFacts = &facts::FACTS;
    const AUDIT_TABLES: &'static AuditTables = &AUDIT_TABLES;
    const DESIGN: fn(&QueuePlan) -> Result<SqlDesign, DesignError> = designs::design;
    /// PostgreSQL's version() names the server itself.
    const VERSION_LABEL: &'static str = "";
    const KEY_SETTINGS: &'static str = KEY_SETTINGS;

    fn harness(options: PgConnectOptions) -> PgConnectOptions {
        harness_options(options)
    }

    fn address(o: &PgConnectOptions) -> String {
        let database = o.get_database().unwrap_or("postgres");
        let user = o.get_username();
        server::address("postgres", user, o.get_host(), o.get_port(), database)
    }

    async fn refused_session_setting(
        options: &PgConnectOptions,
        settings: &[(String, String)],
    ) -> Result<Option<(String, String)>, BackendError> {
        let names: Vec<&str> = settings.iter().map(|(k, _)| k.as_str()).collect();
        let mut conn = PgConnection::connect_with(options).await?;
        let contexts: Vec<(String, String)> =
            sqlx::query_as("SELECT name, context FROM pg_settings WHERE name = ANY($1)")
                .bind(&names)
                .fetch_all(&mut conn)
                .await?;
        conn.close().await.ok();
        let contexts: BTreeMap<String, String> = contexts.into_iter().collect();
        Ok(settings.iter().find_map(|(name, value)| {
            // A dotted name is an extension's placeholder, which any session may set.
            let context = match contexts.get(name) {
                None if name.contains('.') => return None,
                None => {
                    return Some((
                        name.clone(),
                        "PostgreSQL has no such setting (SHOW ALL lists them)".to_string(),
                    ));
                }
                Some(c) if c == "user" || c == "superuser" => return None,
                Some(c) => c,
            };
            let how = match context.as_str() {
                "postmaster" => {
                    format!("ALTER SYSTEM SET {name} = '{value}' and restart the server")
                }
                "sighup" => format!("ALTER SYSTEM SET {name} = '{value}'; SELECT pg_reload_conf()"),
                _ => "it is fixed when the server is built or a session starts".to_string(),
            };
            Some((
                name.clone(),
                format!(
                    "PostgreSQL applies it to the whole server (context {context}), not to one \
                     session, so a run on a server you named cannot set it: set it on the \
                     server ({how}), or let the run start a server of its own with --db local \
                     or --db container"
                ),
            ))
        }))
    }


    fn create_namespace(name: &str) -> String {
        format!("CREATE SCHEMA \"{name}\"")
    }

    fn into_namespace(options: &PgConnectOptions, name: &str) -> PgConnectOptions {
        options.clone().options([("search_path", name)])
    }

    async fn open(options: &PgConnectOptions, name: String) -> Result<PgConnection, BackendError> {
        let options = options.clone().application_name(&name);
        Ok(PgConnection::connect_with(&options).await?)
    }

    fn link(conn: PgConnection, shared: Arc<Shared>) -> Box<dyn Link> {
        Box::new(PgLink::new(conn, shared))
    }

    async fn check(conn: &mut PgConnection, d: &SqlDesign) -> Result<(), DesignError> {
        check::check_statements(conn, d).await
    }

    fn url(options: &PgConnectOptions) -> String {
        let mut url = options.to_url_lossy();
        if let Some(opts) = options.get_options() {
            url.query_pairs_mut().append_pair("options", opts);
        }
        url.to_string()
    }

    fn client_env(o: &PgConnectOptions, namespace: &str) -> Vec<(String, String)> {
        let host = match o.get_socket() {
            Some(socket) => socket.display().to_string(),
            None => o.get_host().to_string(),
        };
        let url = o.to_url_lossy();
        vec![
            ("PGHOST".into(), host),
            ("PGPORT".into(), o.get_port().to_string()),
            ("PGUSER".into(), o.get_username().to_string()),
            (
                "PGPASSWORD".into(),
                url.password().unwrap_or("").to_string(),
            ),
            (
                "PGDATABASE".into(),
                o.get_database().unwrap_or("postgres").to_string(),
            ),
            ("PGOPTIONS".into(), format!("-c search_path={namespace}")),
        ]
    }

    /// Drops the run's schema. A session of the run still in a transaction (a second
    /// Ctrl-C does not wait for the workers) would hold the drop: after 2 s of waiting, the
    /// run's own sessions are ended and the drop tried again.
    async fn drop_namespace(queue: &PgQueue) -> Result<(), BackendError> {
        let mut conn = queue.open("main").await?;
        let drop = format!("DROP SCHEMA \"{}\" CASCADE", queue.shared.namespace);
        conn.execute("SET lock_timeout = '2s'").await?;
        if conn.execute(AssertSqlSafe(drop.clone())).await.is_err() {
            sqlx::query(END_RUN_SESSIONS)
                .bind(queue.session_name("%"))
                .execute(&mut conn)
                .await?;
            conn.execute(AssertSqlSafe(drop)).await?;
        }
        conn.close().await.ok();
        Ok(())
    }

    fn wake_ups(queue: &PgQueue, stop: &CancellationToken) -> Option<Arc<Notify>> {
        if queue.shared.info.wake_up != super::seam::WakeUp::Notify {
            return None;
        }
        let notify = Arc::new(Notify::new());
        let options = queue
            .options
            .clone()
            .application_name(&queue.session_name("listener"));
        let d = &queue.shared.design;
        let channel = d.channel.as_ref().unwrap_or(&queue.shared.namespace);
        tokio::spawn(listen(
            options,
            channel.clone(),
            notify.clone(),
            stop.clone(),
        ));
        Some(notify)
    }
}

/// Ends the run's other sessions ($1: its application names' pattern).
const END_RUN_SESSIONS: &str = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
 WHERE datname = current_database() AND application_name LIKE $1 AND pid <> pg_backend_pid()";

/// LISTENs on the run's channel (its schema's name) on a connection of its own and turns
/// every notification into one wake-up. Reconnects after a lost connection; notifications
/// sent meanwhile are lost, and the poll covers for them.
async fn listen(
    options: PgConnectOptions,
    channel: String,
    notify: Arc<Notify>,
    stop: CancellationToken,
) {
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .connect_lazy_with(options);
    let pause = || tokio::time::sleep(std::time::Duration::from_millis(200));
    while !stop.is_cancelled() {
        let mut listener = match PgListener::connect_with(&pool).await {
            Ok(l) => l,
            Err(e) => {
                tracing::debug!("listener: cannot connect, retrying: {e}");
                tokio::select! { _ = pause() => continue, _ = stop.cancelled() => break }
            }
        };
        if let Err(e) = listener.listen(&channel).await {
            tracing::debug!("listener: LISTEN failed, retrying: {e}");
            tokio::select! { _ = pause() => continue, _ = stop.cancelled() => break }
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
