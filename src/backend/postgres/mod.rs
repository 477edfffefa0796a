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
    Attachment, Backend, ContainerImage, DesignError, DesignInfo, Driver, Endpoint, InstallError,
    Link, LocalServer, ServerFacts, Servers,
};
use super::sql::Shared;
use super::sql::design::SqlDesign;
use super::sql::namespace_name;
use super::sql::rehearsal;
use super::sql::server::{self, AuditTables};
use crate::backend::engine::{EngineFacts, ShutdownMode};
use crate::backend::queue::QueuePlan;
use async_trait::async_trait;
use link::PgLink;
use sqlx::Postgres;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgListener, PgPoolOptions};
use sqlx::{AssertSqlSafe, ConnectOptions, Connection, Executor};
use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::Arc;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// This engine takes no settings of its own (the registry's `EngineSettings`).
pub type Settings = crate::backend::engine::NoSettings;

pub struct PgDriver;

pub static DRIVER: PgDriver = PgDriver;

/// Options every harness connection shares: a recognizable application name (so
/// `pg_stat_activity` shows which backends are ours) and no statement logging (sqlx would
/// otherwise time and log every statement: a load generator's statements are its
/// measurement, and that bookkeeping is CPU taken from the server it loads).
fn harness_options(options: PgConnectOptions) -> PgConnectOptions {
    options
        .application_name("dbq-bench")
        .disable_statement_logging()
}

impl Driver for PgDriver {
    fn facts(&self) -> &'static EngineFacts {
        &facts::FACTS
    }

    fn servers(&self) -> Option<&dyn Servers> {
        Some(self)
    }

    fn endpoint(
        &self,
        url: &str,
        settings: &[(String, String)],
    ) -> Result<Arc<dyn Endpoint>, String> {
        let options = PgConnectOptions::from_str(url).map_err(|e| e.to_string())?;
        // On a server the run does not own, settings can only be session settings.
        let options = harness_options(options)
            .options(settings.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        Ok(Arc::new(PgEndpoint { options }))
    }

    fn attach(&self, at: &Attachment, queue: &QueuePlan) -> Result<Arc<dyn Backend>, BackendError> {
        // The namespace is the search path, whatever the URL says (`prove` is given the
        // server's own URL).
        let options =
            PgConnectOptions::from_str(&at.url)?.options([("search_path", at.namespace.as_str())]);
        let design = designs::design(queue).map_err(design_error)?;
        Ok(Arc::new(PgQueue::new(
            harness_options(options),
            at.namespace.clone(),
            design,
            queue,
        )))
    }
}

impl Servers for PgDriver {
    fn shutdown_signal(&self, mode: ShutdownMode) -> nix::sys::signal::Signal {
        match mode {
            // A fast shutdown: open transactions roll back, a checkpoint, exit.
            ShutdownMode::Fast => nix::sys::signal::Signal::SIGINT,
            // Immediate: exit at once; crash recovery on the next start.
            ShutdownMode::Immediate => nix::sys::signal::Signal::SIGQUIT,
        }
    }

    fn local(&self) -> &dyn LocalServer {
        &provider::LOCAL
    }

    fn container(&self) -> &dyn ContainerImage {
        &provider::CONTAINER
    }
}

fn design_error(e: DesignError) -> BackendError {
    BackendError::new(super::error::ErrorClass::Permanent, e.to_string())
}

/// A PostgreSQL server.
pub struct PgEndpoint {
    options: PgConnectOptions,
}

impl PgEndpoint {
    pub fn new(options: PgConnectOptions) -> PgEndpoint {
        PgEndpoint {
            options: harness_options(options),
        }
    }
}

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

#[async_trait]
impl Endpoint for PgEndpoint {
    fn address(&self) -> String {
        let o = &self.options;
        let database = o.get_database().unwrap_or("postgres");
        server::address(
            "postgres",
            o.get_username(),
            o.get_host(),
            o.get_port(),
            database,
        )
    }

    async fn ping(&self) -> Result<(), BackendError> {
        server::ping::<PgConnection>(&self.options).await
    }

    async fn describe(&self) -> Result<ServerFacts, BackendError> {
        let mut conn = PgConnection::connect_with(&self.options).await?;
        // PostgreSQL's version() names the server itself.
        let facts = server::describe::<Postgres>(&mut conn, "", KEY_SETTINGS).await;
        conn.close().await.ok();
        facts
    }

    async fn refused_session_setting(
        &self,
        settings: &[(String, String)],
    ) -> Result<Option<(String, String)>, BackendError> {
        let names: Vec<&str> = settings.iter().map(|(k, _)| k.as_str()).collect();
        let mut conn = PgConnection::connect_with(&self.options).await?;
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

    async fn install(
        &self,
        prefix: &str,
        queue: &QueuePlan,
        audit: bool,
    ) -> Result<Arc<dyn Backend>, InstallError> {
        let design = designs::design(queue)?;
        let name = namespace_name(prefix)?;
        let mut conn = PgConnection::connect_with(&self.options).await?;
        // `name` is made of a validated prefix, digits and hex: safe to splice.
        conn.execute(AssertSqlSafe(format!("CREATE SCHEMA \"{name}\"")))
            .await?;
        conn.close().await.ok();
        let options = self
            .options
            .clone()
            .options([("search_path", name.as_str())]);
        let backend = PgQueue::new(options, name, design, queue);
        if let Err(e) = backend.install(audit).await {
            backend.drop_namespace().await.ok();
            return Err(e);
        }
        Ok(Arc::new(backend))
    }
}

/// A queue installed in a schema of its own.
pub struct PgQueue {
    shared: Arc<Shared>,
    /// Connection options whose `search_path` is the namespace.
    options: PgConnectOptions,
}

impl PgQueue {
    fn new(
        options: PgConnectOptions,
        namespace: String,
        design: SqlDesign,
        q: &QueuePlan,
    ) -> PgQueue {
        PgQueue {
            shared: Shared::new(namespace, design, q),
            options,
        }
    }

    fn application_name(&self, role: &str) -> String {
        format!("dbq-bench/{}/{role}", self.shared.namespace)
    }

    async fn raw_connect(&self, role: &str) -> Result<PgConnection, BackendError> {
        let options = self
            .options
            .clone()
            .application_name(&self.application_name(role));
        Ok(PgConnection::connect_with(&options).await?)
    }

    /// Creates the design's tables (and the completion audit when asked); a custom design's
    /// schema and statements are checked here, before any load, and their failures blamed
    /// on its files.
    async fn install(&self, audit: bool) -> Result<(), InstallError> {
        let mut conn = self.raw_connect("main").await?;
        let d = &self.shared.design;
        let audit = audit.then_some(&AUDIT_TABLES);
        let result =
            server::install::<Postgres, _>(&mut conn, d, audit, check::check_statements).await;
        conn.close().await.ok();
        result?;
        rehearsal::rehearse_custom(self, d).await
    }
}

#[async_trait]
impl Backend for PgQueue {
    fn namespace(&self) -> &str {
        &self.shared.namespace
    }

    fn design(&self) -> &DesignInfo {
        &self.shared.info
    }

    async fn connect(&self, role: &str) -> Result<Box<dyn Link>, BackendError> {
        let conn = self.raw_connect(role).await?;
        Ok(Box::new(PgLink::new(conn, self.shared.clone())))
    }

    fn wake_ups(&self, stop: &CancellationToken) -> Option<Arc<Notify>> {
        if self.shared.info.wake_up != super::seam::WakeUp::Notify {
            return None;
        }
        let notify = Arc::new(Notify::new());
        let options = self
            .options
            .clone()
            .application_name(&self.application_name("listener"));
        let d = &self.shared.design;
        let channel = d.channel.as_ref().unwrap_or(&self.shared.namespace);
        tokio::spawn(listen(
            options,
            channel.clone(),
            notify.clone(),
            stop.clone(),
        ));
        Some(notify)
    }

    fn attachment(&self) -> Option<Attachment> {
        let mut url = self.options.to_url_lossy();
        if let Some(opts) = self.options.get_options() {
            url.query_pairs_mut().append_pair("options", opts);
        }
        Some(Attachment {
            engine: facts::FACTS.name.to_string(),
            url: url.to_string(),
            namespace: self.shared.namespace.clone(),
        })
    }

    fn client_env(&self) -> Vec<(String, String)> {
        let o = &self.options;
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
            (
                "PGOPTIONS".into(),
                format!("-c search_path={}", self.shared.namespace),
            ),
        ]
    }

    /// Drops the run's schema. A session of the run still in a transaction (a second
    /// Ctrl-C does not wait for the workers) would hold the drop: after 2 s of waiting, the
    /// run's own sessions are ended and the drop tried again.
    async fn drop_namespace(&self) -> Result<(), BackendError> {
        let mut conn = self.raw_connect("main").await?;
        let drop = format!("DROP SCHEMA \"{}\" CASCADE", self.shared.namespace);
        conn.execute("SET lock_timeout = '2s'").await?;
        if conn.execute(AssertSqlSafe(drop.clone())).await.is_err() {
            sqlx::query(END_RUN_SESSIONS)
                .bind(format!("dbq-bench/{}/%", self.shared.namespace))
                .execute(&mut conn)
                .await?;
            conn.execute(AssertSqlSafe(drop)).await?;
        }
        conn.close().await.ok();
        Ok(())
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
