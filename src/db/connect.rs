//! Connecting: common connection options, readiness as connect-with-retry against a deadline,
//! and the per-run schema every run (and every test) works inside.

use anyhow::{Context, Result, bail};
use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{ConnectOptions, Connection};
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
    options: &PgConnectOptions,
    timeout: Duration,
    mut alive: impl Liveness,
) -> Result<PgConnection> {
    let deadline = Instant::now() + timeout;
    loop {
        match PgConnection::connect_with(options).await {
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
            // 28xxx auth, 3D000 unknown database, 22023/42704 bad option value or name.
            // 57P03 ("the database system is starting up") is worth waiting for.
            code.starts_with("28") || code == "3D000" || code == "22023" || code == "42704"
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
    options: PgConnectOptions,
}

impl RunSchema {
    /// Creates a fresh schema named `prefix_<time>_<random>`. `prefix` must be a plain
    /// identifier (it is validated, never quoted user input).
    pub async fn create(server: &PgConnectOptions, prefix: &str) -> Result<RunSchema> {
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
        let mut conn = PgConnection::connect_with(server)
            .await
            .context("connecting to create the run schema")?;
        // `name` is built above from a validated prefix, digits and hex: safe to splice.
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE SCHEMA \"{name}\"")))
            .execute(&mut conn)
            .await
            .with_context(|| format!("creating schema {name}"))?;
        conn.close().await.ok();
        let options = server.clone().options([("search_path", name.as_str())]);
        let schema = RunSchema { name, options };
        open_schemas().push(schema.clone());
        Ok(schema)
    }

    /// This schema is no longer the process's to clean up after a panic: it is kept for
    /// the user, or goes with the server the run started.
    pub fn release(&self) {
        open_schemas().retain(|s| s.name != self.name);
    }

    /// Connection options whose `search_path` is this schema.
    pub fn options(&self) -> &PgConnectOptions {
        &self.options
    }

    pub async fn connect(&self) -> Result<PgConnection> {
        self.connect_as("main").await
    }

    /// The `application_name` of this run's connections in `role`:
    /// `dbq-bench/<schema>/<role>`, so a run's own backends can be told apart in
    /// `pg_stat_activity` (and targeted by `kill_backends`) even on a shared server.
    pub fn application_name(&self, role: &str) -> String {
        format!("dbq-bench/{}/{role}", self.name)
    }

    /// Connects in `role` (see [`RunSchema::application_name`]).
    pub async fn connect_as(&self, role: &str) -> Result<PgConnection> {
        // sqlx times and logs every statement by default; a load generator's statements
        // are its measurement, and that bookkeeping is CPU taken from the server it loads.
        PgConnection::connect_with(
            &self
                .options
                .clone()
                .application_name(&self.application_name(role))
                .disable_statement_logging(),
        )
        .await
        .with_context(|| format!("connecting to schema {}", self.name))
    }

    /// A URL that connects to this schema (password and session options included), for
    /// worker processes.
    pub fn url(&self) -> String {
        let mut url = self.options.to_url_lossy();
        if let Some(opts) = self.options.get_options() {
            url.query_pairs_mut().append_pair("options", opts);
        }
        url.to_string()
    }

    /// The schema `name` as reached through `url` (from [`RunSchema::url`]).
    pub fn from_url(url: &str, name: &str) -> Result<RunSchema> {
        let options: PgConnectOptions = url.parse().context("parsing the schema URL")?;
        Ok(RunSchema {
            name: name.to_string(),
            options: harness_options(options),
        })
    }

    /// Drops the schema and everything in it.
    pub async fn drop_schema(&self) -> Result<()> {
        self.release();
        let mut conn = self.connect().await?;
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "DROP SCHEMA \"{}\" CASCADE",
            self.name
        )))
        .execute(&mut conn)
        .await
        .with_context(|| format!("dropping schema {}", self.name))?;
        conn.close().await.ok();
        Ok(())
    }
}
