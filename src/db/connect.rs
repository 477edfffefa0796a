//! Connecting: common connection options, readiness as connect-with-retry against a deadline,
//! and the per-run schema every run (and every test) works inside.

use super::engine::{Conn, ServerOptions};
use anyhow::{Context, Result, bail};
use sqlx::ConnectOptions;
use sqlx::mysql::MySqlConnectOptions;
use sqlx::postgres::PgConnectOptions;
use std::collections::HashMap;
use std::time::Duration;
use tokio::time::Instant;

/// Options every harness connection shares: a recognizable application name (so
/// `pg_stat_activity` shows which backends are ours) and no statement logging (sqlx would
/// otherwise log each slow statement as a warning in the middle of the progress display).
pub fn harness_options(options: PgConnectOptions) -> PgConnectOptions {
    options
        .application_name("dbq-bench")
        .disable_statement_logging()
}

/// The same for MariaDB, which has no application name (see [`MariadbSessions`]).
pub fn mariadb_harness_options(options: MySqlConnectOptions) -> MySqlConnectOptions {
    options.disable_statement_logging()
}

/// Whether a server that does not accept connections yet can still come up (a server
/// process that exited never will).
pub trait Liveness {
    fn check(&mut self) -> impl Future<Output = Result<()>> + Send;
}

/// For servers the run does not control: nothing to check.
pub struct Unknown;

impl Liveness for Unknown {
    async fn check(&mut self) -> Result<()> {
        Ok(())
    }
}

/// Connects, retrying every 100 ms until `timeout` has passed. Between attempts `alive` is
/// asked whether the server can still come up; an error from it ends the wait at once.
pub async fn wait_until_ready(
    options: &ServerOptions,
    timeout: Duration,
    mut alive: impl Liveness,
) -> Result<Conn> {
    let deadline = Instant::now() + timeout;
    loop {
        match options.connect().await {
            Ok(conn) => return Ok(conn),
            Err(e) if is_auth_or_config_error(&e) => {
                return Err(e).context("the server answered but refused the connection");
            }
            Err(e) => {
                alive.check().await?;
                if Instant::now() >= deadline {
                    bail!(
                        "the server did not accept connections within {} (last error: {e})",
                        humantime::format_duration(timeout)
                    );
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Errors that retrying cannot fix (wrong password, unknown database, bad setting).
fn is_auth_or_config_error(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => {
            let code = db.code().unwrap_or_default();
            // 28xxx auth, 3D000 unknown database, 22023/42704 bad option value or name;
            // MariaDB: 42000 unknown database. 57P03 ("the database system is starting up")
            // is worth waiting for.
            code.starts_with("28") || ["3D000", "22023", "42704", "42000"].contains(&code.as_ref())
        }
        sqlx::Error::Configuration(_) => true,
        _ => false,
    }
}

/// Schemas this process created that are neither dropped nor handed over (`--keep`, a
/// server torn down with them): dropped by [`drop_open_schemas`] after a panic, so that a
/// bug does not leave a run's tables on a server the user owns.
static OPEN_SCHEMAS: std::sync::Mutex<Vec<RunSchema>> = std::sync::Mutex::new(Vec::new());

fn open_schemas() -> std::sync::MutexGuard<'static, Vec<RunSchema>> {
    OPEN_SCHEMAS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Drops every schema still open (see [`OPEN_SCHEMAS`]), each given 5 s; errors are
/// ignored, as this only runs on the way out of a failed process.
pub async fn drop_open_schemas() {
    let open = std::mem::take(&mut *open_schemas());
    for schema in open {
        let drop = schema.drop_schema();
        let _ = tokio::time::timeout(Duration::from_secs(5), drop).await;
    }
}

/// A schema made for one run (or one test) on a server: every table the run creates lives in
/// it, every connection of the run has it as `search_path`, and it is dropped at the end.
#[derive(Debug, Clone)]
pub struct RunSchema {
    pub name: String,
    options: ServerOptions,
}

/// MariaDB has no `application_name`: the roles of this process's MariaDB sessions, by
/// connection id, so that `kill_backends` can target a role (see
/// [`RunSchema::connect_as`]).
static MARIADB_SESSIONS: std::sync::Mutex<Option<HashMap<u64, String>>> =
    std::sync::Mutex::new(None);

/// The isolation level of the run's MariaDB sessions (see [`RunSchema::connect_as`]).
pub const MARIADB_ISOLATION: &str = "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED";

/// The roles this process gave its MariaDB sessions.
pub struct MariadbSessions;

impl MariadbSessions {
    fn register(id: u64, application_name: String) {
        let mut map = MARIADB_SESSIONS.lock().unwrap_or_else(|e| e.into_inner());
        map.get_or_insert_with(HashMap::new)
            .insert(id, application_name);
    }

    /// The application name (`dbq-bench/<schema>/<role>`) this process gave session `id`,
    /// or `None` for a session of another process (a worker process's).
    pub fn name_of(id: u64) -> Option<String> {
        let map = MARIADB_SESSIONS.lock().unwrap_or_else(|e| e.into_inner());
        map.as_ref().and_then(|m| m.get(&id).cloned())
    }
}

impl RunSchema {
    /// Creates a fresh schema named `prefix_<time>_<random>`. `prefix` must be a plain
    /// identifier (it is validated, never quoted user input).
    pub async fn create(server: &ServerOptions, prefix: &str) -> Result<RunSchema> {
        if !prefix
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            || prefix.is_empty()
        {
            bail!("invalid schema prefix {prefix:?}");
        }
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let name = format!("{prefix}_{stamp}_{:08x}", rand::random::<u32>());
        let mut conn = server
            .connect()
            .await
            .context("connecting to create the run schema")?;
        // `name` is built above from a validated prefix, digits and hex: safe to splice.
        // On MariaDB a schema is a database.
        let ddl = match server {
            ServerOptions::Postgres(_) => format!("CREATE SCHEMA \"{name}\""),
            ServerOptions::Mariadb(_) => format!("CREATE DATABASE `{name}`"),
        };
        conn.execute(&ddl)
            .await
            .with_context(|| format!("creating schema {name}"))?;
        conn.close().await.ok();
        let options = match server {
            ServerOptions::Postgres(o) => {
                ServerOptions::Postgres(o.clone().options([("search_path", name.as_str())]))
            }
            ServerOptions::Mariadb(o) => ServerOptions::Mariadb(o.clone().database(&name)),
        };
        let schema = RunSchema { name, options };
        open_schemas().push(schema.clone());
        Ok(schema)
    }

    /// This schema is no longer the process's to clean up after a panic: it is kept for
    /// the user, or goes with the server the run started.
    pub fn release(&self) {
        open_schemas().retain(|s| s.name != self.name);
    }

    /// Connection options whose `search_path` (MariaDB: database) is this schema.
    pub fn options(&self) -> &ServerOptions {
        &self.options
    }

    pub fn engine(&self) -> crate::scenario::Engine {
        self.options.engine()
    }

    pub async fn connect(&self) -> Result<Conn> {
        self.connect_as("main").await
    }

    /// The `application_name` of this run's connections in `role`:
    /// `dbq-bench/<schema>/<role>`, so a run's own backends can be told apart in
    /// `pg_stat_activity` (and targeted by `kill_backends`) even on a shared server.
    pub fn application_name(&self, role: &str) -> String {
        format!("dbq-bench/{}/{role}", self.name)
    }

    /// Connects in `role` (see [`RunSchema::application_name`]).
    pub async fn connect_as(&self, role: &str) -> Result<Conn> {
        // sqlx times and logs every statement by default; a load generator's statements
        // are its measurement, and that bookkeeping is CPU taken from the server it loads.
        let connected = match &self.options {
            ServerOptions::Postgres(o) => ServerOptions::Postgres(
                o.clone()
                    .application_name(&self.application_name(role))
                    .disable_statement_logging(),
            )
            .connect()
            .await
            .map_err(anyhow::Error::from),
            ServerOptions::Mariadb(o) => {
                self.connect_mariadb_as(o.clone().disable_statement_logging(), role)
                    .await
            }
        };
        connected.with_context(|| format!("connecting to schema {}", self.name))
    }

    /// Connects to MariaDB and registers the session's role (see [`MariadbSessions`]). The
    /// session runs READ COMMITTED, PostgreSQL's default: under InnoDB's default REPEATABLE
    /// READ the claim's locking reads also lock the gaps between index entries, and
    /// producers' inserts would wait on workers' claims.
    async fn connect_mariadb_as(&self, options: MySqlConnectOptions, role: &str) -> Result<Conn> {
        let mut conn = ServerOptions::Mariadb(options).connect().await?;
        conn.execute(MARIADB_ISOLATION).await?;
        if let Conn::Mariadb(c) = &mut conn {
            let id: u64 = sqlx::query_scalar("SELECT CONNECTION_ID()")
                .fetch_one(&mut *c)
                .await?;
            MariadbSessions::register(id, self.application_name(role));
        }
        Ok(conn)
    }

    /// A URL that connects to this schema (password and session options included), for
    /// worker processes.
    pub fn url(&self) -> String {
        self.options.to_url()
    }

    /// The schema `name` as reached through `url` (from [`RunSchema::url`]).
    pub fn from_url(url: &str, name: &str) -> Result<RunSchema> {
        let engine = if url.starts_with("mysql:") {
            crate::scenario::Engine::Mariadb
        } else {
            crate::scenario::Engine::Postgres
        };
        let options =
            match ServerOptions::from_url(engine, url).context("parsing the schema URL")? {
                ServerOptions::Postgres(o) => ServerOptions::Postgres(harness_options(o)),
                ServerOptions::Mariadb(o) => ServerOptions::Mariadb(mariadb_harness_options(o)),
            };
        Ok(RunSchema {
            name: name.to_string(),
            options,
        })
    }

    /// Drops the schema and everything in it.
    pub async fn drop_schema(&self) -> Result<()> {
        self.release();
        let mut conn = self.connect().await?;
        let ddl = match self.engine() {
            crate::scenario::Engine::Postgres => format!("DROP SCHEMA \"{}\" CASCADE", self.name),
            crate::scenario::Engine::Mariadb => format!("DROP DATABASE `{}`", self.name),
        };
        conn.execute(&ddl)
            .await
            .with_context(|| format!("dropping schema {}", self.name))?;
        conn.close().await.ok();
        Ok(())
    }
}
