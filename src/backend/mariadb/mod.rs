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
use link::MariaLink;
use sqlx::MySql;
use sqlx::mysql::{MySqlConnectOptions, MySqlConnection};
use sqlx::{AssertSqlSafe, ConnectOptions, Connection, Executor};
use std::collections::HashMap;
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

pub static DRIVER: SqlDriver<Maria> = SqlDriver::new();

/// A MariaDB server.
pub type MariaEndpoint = SqlEndpoint<Maria>;

/// MariaDB's side of the shared SQL queue: a database as the namespace; sessions known by
/// their connection ids, kept by this process ([`Sessions`]); READ COMMITTED.
pub struct Maria;

/// A queue installed in a database of its own.
pub type MariaQueue = SqlQueue<Maria>;

impl Dialect for Maria {
    type Db = MySql;
    const FACTS: &'static EngineFacts = &facts::FACTS;
    const AUDIT_TABLES: &'static AuditTables = &AUDIT_TABLES;
    const DESIGN: fn(&QueuePlan) -> Result<SqlDesign, DesignError> = designs::design;
    /// MariaDB's version() is a bare number (10.11.6-MariaDB-…): named here.
    const VERSION_LABEL: &'static str = "MariaDB ";
    const KEY_SETTINGS: &'static str = KEY_SETTINGS;

    fn harness(options: MySqlConnectOptions) -> MySqlConnectOptions {
        options.disable_statement_logging()
    }

    fn address(o: &MySqlConnectOptions) -> String {
        let database = o.get_database().unwrap_or("");
        let user = o.get_username();
        server::address("mysql", user, o.get_host(), o.get_port(), database)
    }

    fn create_namespace(name: &str) -> String {
        format!("CREATE DATABASE `{name}`")
    }

    fn into_namespace(options: &MySqlConnectOptions, name: &str) -> MySqlConnectOptions {
        options.clone().database(name)
    }

    /// Connects, sets the isolation level and records the session's name.
    async fn open(
        options: &MySqlConnectOptions,
        name: String,
    ) -> Result<MySqlConnection, BackendError> {
        let mut conn = MySqlConnection::connect_with(options).await?;
        conn.execute(ISOLATION).await?;
        let id: u64 = sqlx::query_scalar("SELECT CONNECTION_ID()")
            .fetch_one(&mut conn)
            .await?;
        Sessions::register(id, name);
        Ok(conn)
    }

    fn link(conn: MySqlConnection, shared: Arc<Shared>) -> Box<dyn Link> {
        Box::new(MariaLink::new(conn, shared))
    }

    async fn check(conn: &mut MySqlConnection, d: &SqlDesign) -> Result<(), DesignError> {
        check::check_statements(conn, d).await
    }

    fn url(options: &MySqlConnectOptions) -> String {
        options.to_url_lossy().to_string()
    }

    fn client_env(o: &MySqlConnectOptions, _namespace: &str) -> Vec<(String, String)> {
        vec![
            ("MYSQL_HOST".into(), o.get_host().to_string()),
            ("MYSQL_TCP_PORT".into(), o.get_port().to_string()),
        ]
    }

    async fn drop_namespace(queue: &MariaQueue) -> Result<(), BackendError> {
        let mut conn = queue.open("main").await?;
        let drop = format!("DROP DATABASE `{}`", queue.shared.namespace);
        conn.execute(AssertSqlSafe(drop)).await?;
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
