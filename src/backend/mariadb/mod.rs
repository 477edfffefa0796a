//! MariaDB (≥ 10.6, MySQL's `SKIP LOCKED`): the seed and batch claims. A queue lives in a
//! database of its own. MariaDB has no `application_name`, so this process keeps the role of
//! each session it opens (see [`Sessions`]); its sessions run READ COMMITTED, PostgreSQL's
//! default: under InnoDB's default REPEATABLE READ the claim's locking reads also lock the
//! gaps between index entries, and producers' inserts would wait on workers' claims.

mod bystand;
mod check;
mod designs;
mod disrupt;
mod facts;
mod inspect;
mod link;
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
use link::MariaLink;
use sqlx::MySql;
use sqlx::mysql::{MySqlConnectOptions, MySqlConnection};
use sqlx::{AssertSqlSafe, ConnectOptions, Connection, Executor};
use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

/// This engine takes no settings of its own (the registry's `EngineSettings`).
pub type Settings = crate::backend::engine::NoSettings;

/// The harness's completion audit and status trigger, in MariaDB's dialect.
const AUDIT_TABLES: AuditTables = AuditTables {
    completion_audit: include_str!("../../../migrations/mariadb/0002_completion_audit.sql"),
    status_trigger: include_str!("../../../migrations/mariadb/0003_status_trigger.sql"),
};

/// The isolation level of the run's sessions.
const ISOLATION: &str = "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED";

/// The settings that decide durability, buffering, locking and purge.
const KEY_SETTINGS: &str = "
SELECT LOWER(VARIABLE_NAME), VARIABLE_VALUE
FROM   information_schema.GLOBAL_VARIABLES
WHERE  VARIABLE_NAME IN ('INNODB_BUFFER_POOL_SIZE', 'INNODB_FLUSH_LOG_AT_TRX_COMMIT', 'SYNC_BINLOG',
                         'LOG_BIN', 'MAX_CONNECTIONS', 'TX_ISOLATION', 'INNODB_AUTOINC_LOCK_MODE',
                         'INNODB_LOCK_WAIT_TIMEOUT', 'INNODB_PURGE_THREADS', 'INNODB_LOG_FILE_SIZE')
UNION ALL
SELECT 'tx_isolation (the run''s sessions)', @@SESSION.tx_isolation
ORDER  BY 1";

pub struct MariaDriver;

pub static DRIVER: MariaDriver = MariaDriver;

/// Reads `mariadb://` as `mysql://`.
fn parse(url: &str) -> sqlx::Result<MySqlConnectOptions> {
    let url = match url.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("mariadb") => {
            format!("mysql://{rest}")
        }
        _ => url.to_string(),
    };
    Ok(MySqlConnectOptions::from_str(&url)?.disable_statement_logging())
}

impl Driver for MariaDriver {
    fn facts(&self) -> &'static EngineFacts {
        &facts::FACTS
    }

    fn servers(&self) -> Option<&dyn Servers> {
        Some(self)
    }

    /// Session settings on a server the run does not own are refused by the plan.
    fn endpoint(
        &self,
        url: &str,
        _settings: &[(String, String)],
    ) -> Result<Arc<dyn Endpoint>, String> {
        let options = parse(url).map_err(|e| e.to_string())?;
        Ok(Arc::new(MariaEndpoint { options }))
    }

    fn attach(&self, at: &Attachment, queue: &QueuePlan) -> Result<Arc<dyn Backend>, BackendError> {
        // The namespace is the database, whatever the URL says (`prove` is given the
        // server's own URL).
        let options = parse(&at.url)?.database(&at.namespace);
        let design = designs::design(queue).map_err(|e: DesignError| {
            BackendError::new(super::error::ErrorClass::Permanent, e.to_string())
        })?;
        Ok(Arc::new(MariaQueue::new(
            options,
            at.namespace.clone(),
            design,
            queue,
        )))
    }
}

impl Servers for MariaDriver {
    fn shutdown_signal(&self, mode: ShutdownMode) -> nix::sys::signal::Signal {
        match mode {
            ShutdownMode::Fast => nix::sys::signal::Signal::SIGTERM,
            ShutdownMode::Immediate => nix::sys::signal::Signal::SIGKILL,
        }
    }

    fn local(&self) -> &dyn LocalServer {
        &provider::LOCAL
    }

    fn container(&self) -> &dyn ContainerImage {
        &provider::CONTAINER
    }
}

/// A MariaDB server.
pub struct MariaEndpoint {
    options: MySqlConnectOptions,
}

impl MariaEndpoint {
    pub fn new(options: MySqlConnectOptions) -> MariaEndpoint {
        MariaEndpoint {
            options: options.disable_statement_logging(),
        }
    }
}

#[async_trait]
impl Endpoint for MariaEndpoint {
    fn address(&self) -> String {
        let o = &self.options;
        let database = o.get_database().unwrap_or("");
        server::address(
            "mysql",
            o.get_username(),
            o.get_host(),
            o.get_port(),
            database,
        )
    }

    async fn ping(&self) -> Result<(), BackendError> {
        server::ping::<MySqlConnection>(&self.options).await
    }

    async fn describe(&self) -> Result<ServerFacts, BackendError> {
        let mut conn = MySqlConnection::connect_with(&self.options).await?;
        conn.execute(ISOLATION).await?;
        // MariaDB's version() is a bare number (10.11.6-MariaDB-…): named here.
        let facts = server::describe::<MySql>(&mut conn, "MariaDB ", KEY_SETTINGS).await;
        conn.close().await.ok();
        facts
    }

    async fn install(
        &self,
        prefix: &str,
        queue: &QueuePlan,
        audit: bool,
    ) -> Result<Arc<dyn Backend>, InstallError> {
        let design = designs::design(queue)?;
        let name = namespace_name(prefix)?;
        let mut conn = MySqlConnection::connect_with(&self.options).await?;
        // `name` is made of a validated prefix, digits and hex: safe to splice.
        conn.execute(AssertSqlSafe(format!("CREATE DATABASE `{name}`")))
            .await?;
        conn.close().await.ok();
        let options = self.options.clone().database(&name);
        let backend = MariaQueue::new(options, name, design, queue);
        if let Err(e) = backend.install(audit).await {
            backend.drop_namespace().await.ok();
            return Err(e);
        }
        Ok(Arc::new(backend))
    }
}

/// A queue installed in a database of its own.
pub struct MariaQueue {
    shared: Arc<Shared>,
    /// Connection options whose database is the namespace.
    options: MySqlConnectOptions,
}

impl MariaQueue {
    fn new(
        options: MySqlConnectOptions,
        namespace: String,
        design: SqlDesign,
        q: &QueuePlan,
    ) -> MariaQueue {
        MariaQueue {
            shared: Shared::new(namespace, design, q),
            options,
        }
    }

    /// Connects, sets the isolation level and records the session's role.
    async fn raw_connect(&self, role: &str) -> Result<MySqlConnection, BackendError> {
        let mut conn = MySqlConnection::connect_with(&self.options).await?;
        conn.execute(ISOLATION).await?;
        let id: u64 = sqlx::query_scalar("SELECT CONNECTION_ID()")
            .fetch_one(&mut conn)
            .await?;
        Sessions::register(id, format!("dbq-bench/{}/{role}", self.shared.namespace));
        Ok(conn)
    }

    /// Creates the design's tables (and the completion audit when asked); a custom design's
    /// schema and statements are checked here, before any load, and their failures blamed
    /// on its files.
    async fn install(&self, audit: bool) -> Result<(), InstallError> {
        let mut conn = self.raw_connect("main").await?;
        let d = &self.shared.design;
        let audit = audit.then_some(&AUDIT_TABLES);
        let result =
            server::install::<MySql, _>(&mut conn, d, audit, check::check_statements).await;
        conn.close().await.ok();
        result?;
        rehearsal::rehearse_custom(self, d).await
    }
}

#[async_trait]
impl Backend for MariaQueue {
    fn namespace(&self) -> &str {
        &self.shared.namespace
    }

    fn design(&self) -> &DesignInfo {
        &self.shared.info
    }

    async fn connect(&self, role: &str) -> Result<Box<dyn Link>, BackendError> {
        let conn = self.raw_connect(role).await?;
        Ok(Box::new(MariaLink::new(conn, self.shared.clone())))
    }

    fn attachment(&self) -> Option<Attachment> {
        Some(Attachment {
            engine: facts::FACTS.name.to_string(),
            url: self.options.to_url_lossy().to_string(),
            namespace: self.shared.namespace.clone(),
        })
    }

    fn client_env(&self) -> Vec<(String, String)> {
        let o = &self.options;
        vec![
            ("MYSQL_HOST".into(), o.get_host().to_string()),
            ("MYSQL_TCP_PORT".into(), o.get_port().to_string()),
        ]
    }

    async fn drop_namespace(&self) -> Result<(), BackendError> {
        let mut conn = self.raw_connect("main").await?;
        conn.execute(AssertSqlSafe(format!(
            "DROP DATABASE `{}`",
            self.shared.namespace
        )))
        .await?;
        conn.close().await.ok();
        Ok(())
    }
}

/// MariaDB has no `application_name`: the roles of this process's sessions, by connection
/// id, so that `kill_backends` can target a role.
pub struct Sessions;

static SESSIONS: Mutex<Option<HashMap<u64, String>>> = Mutex::new(None);

impl Sessions {
    fn register(id: u64, application_name: String) {
        let mut map = SESSIONS.lock().unwrap_or_else(|e| e.into_inner());
        map.get_or_insert_with(HashMap::new)
            .insert(id, application_name);
    }

    /// The name (`dbq-bench/<namespace>/<role>`) this process gave session `id`, or `None`
    /// for a session of another process (a worker process's).
    pub fn name_of(id: u64) -> Option<String> {
        let map = SESSIONS.lock().unwrap_or_else(|e| e.into_inner());
        map.as_ref().and_then(|m| m.get(&id).cloned())
    }
}
