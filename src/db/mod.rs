//! Providers: how a run obtains PostgreSQL, and how it gives it back.
//!
//! `provision` returns a [`Server`]: connection options plus whatever the run must tear down
//! (a container, a local cluster, or nothing for a `url` server). Every run then works in its
//! own [`RunSchema`] on that server.

pub mod connect;
pub mod container;
pub mod engine;
pub mod local;

pub use connect::{MariadbSessions, RunSchema, harness_options};
pub use engine::{Conn, ServerOptions, url_schemes};

use crate::error::Failure;
use crate::scenario::{DatabasePlan, Engine, ProviderKind, ShutdownMode};
use anyhow::{Context, Result, anyhow};
use std::time::Duration;

/// A database server ready for the run.
pub struct Server {
    /// The provider that was used (never `Auto`).
    pub provider: ProviderKind,
    /// Human description: image and container id, data directory, or the redacted URL.
    pub description: String,
    /// `SELECT version()` of the server.
    pub version: String,
    /// Why `auto` passed over the providers it tried before this one, one line each
    /// (`container skipped: …`); empty for an explicit provider.
    pub skipped: Vec<String>,
    options: ServerOptions,
    owned: Owned,
}

enum Owned {
    Nothing,
    Container(Box<container::DbContainer>),
    Local(std::sync::Mutex<local::LocalCluster>),
}

impl Server {
    pub fn options(&self) -> &ServerOptions {
        &self.options
    }

    pub fn engine(&self) -> Engine {
        self.options.engine()
    }

    /// Id of the container when the `container` provider started the server.
    pub fn container_id(&self) -> Option<&str> {
        match &self.owned {
            Owned::Container(c) => Some(c.id()),
            _ => None,
        }
    }

    /// Whether this run started the server (and so may stop it).
    pub fn is_owned(&self) -> bool {
        !matches!(self.owned, Owned::Nothing)
    }

    /// Stops the server and starts it again (`restart_server`), then waits until it accepts
    /// connections. Only for servers the run started.
    pub async fn restart(
        &self,
        mode: ShutdownMode,
        down_for: Duration,
        timeout: Duration,
    ) -> Result<()> {
        match &self.owned {
            Owned::Nothing => anyhow::bail!(
                "restart_server needs a server the run started (provider container or local)"
            ),
            Owned::Container(c) => {
                c.restart(mode, down_for).await?;
                connect::wait_until_ready(&self.options, timeout, &**c)
                    .await?
                    .close()
                    .await
                    .ok();
            }
            Owned::Local(l) => {
                tokio::task::block_in_place(|| l.lock().map(|mut c| c.shut_down(mode)).ok());
                tokio::time::sleep(down_for).await;
                l.lock()
                    .map_err(|_| anyhow::anyhow!("the local cluster lock is poisoned"))?
                    .start_again()?;
                connect::wait_until_ready(&self.options, timeout, l)
                    .await?
                    .close()
                    .await
                    .ok();
            }
        }
        Ok(())
    }

    /// Stops and removes what the run started. A `url` server is left alone.
    pub async fn teardown(self) -> Result<()> {
        match self.owned {
            Owned::Nothing => Ok(()),
            Owned::Container(c) => c.remove().await,
            Owned::Local(l) => {
                if let Ok(mut l) = l.into_inner() {
                    tokio::task::spawn_blocking(move || l.stop()).await.ok();
                }
                Ok(())
            }
        }
    }

    /// Leaves the server running after the process exits (`--keep`); returns how to reach it.
    pub fn leak(self) -> String {
        let url = self.options.address();
        match self.owned {
            Owned::Nothing => url,
            Owned::Container(c) => {
                let id = c.id().to_string();
                std::mem::forget(c);
                format!("{url} (container {id}; remove with `docker rm -f {id}`)")
            }
            Owned::Local(l) => {
                let dir = l.lock().map(|l| l.data_dir()).unwrap_or_default();
                std::mem::forget(l);
                let stop = match self.options.engine() {
                    Engine::Postgres => format!("pg_ctl -D {} stop", dir.display()),
                    Engine::Mariadb => format!("kill $(cat {}/../mariadb.pid)", dir.display()),
                };
                format!("{url} (data in {}; stop with `{stop}`)", dir.display())
            }
        }
    }
}

/// How long the `url` provider retries a server that does not answer.
const URL_READY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// What to do instead when no container can be had: build the image here, or use another
/// provider. One wording for `auto`'s summary and for an explicit `--db container`.
fn container_alternatives(engine: Engine, image: &str) -> String {
    match engine {
        Engine::Postgres => format!(
            "make the image available (`docker pull {image}`, or, where no registry is reachable, \
             `docker/build-postgres-image.sh` and DBQ_POSTGRES_IMAGE=dbq-bench-postgres:15 or --image), \
             use the server binaries with --db local (`apt-get install postgresql`), \
             or name a server with --db url --database-url postgres://…"
        ),
        Engine::Mariadb => format!(
            "make the image available (`docker pull {image}`, or, where no registry is reachable, \
             `docker/build-mariadb-image.sh` and DBQ_MARIADB_IMAGE=dbq-bench-mariadb:10.11 or --image), \
             use the server binaries with --db local (`apt-get install mariadb-server`), \
             or name a server with --db url --database-url mysql://…"
        ),
    }
}

/// Whether the local provider's binaries are installed for `engine`.
fn local_binaries(engine: Engine) -> Result<()> {
    match engine {
        Engine::Postgres => local::find_binaries().map(drop),
        Engine::Mariadb => local::find_mariadb_binaries().map(drop),
    }
}

/// Obtains a server as the plan says. `auto` takes a URL if one is given, else a container
/// if Docker answers and the image is available, else a local cluster if the binaries are
/// installed, and otherwise fails with one message listing what was tried. The server it
/// returns says why each provider before it was skipped.
pub async fn provision(plan: &DatabasePlan) -> Result<Server, Failure> {
    match plan.provider {
        ProviderKind::Url => Ok(from_url(plan).await?),
        ProviderKind::Container => {
            if let Err(e) = container::check_available(&plan.image).await {
                return Err(anyhow!(
                    "container provider: image {}: {e:#}. Instead: {}",
                    plan.image,
                    container_alternatives(plan.engine, &plan.image)
                )
                .into());
            }
            Ok(start_container(plan).await?)
        }
        ProviderKind::Local => Ok(start_local(plan).await?),
        ProviderKind::Auto => {
            if plan.url.is_some() {
                return Ok(from_url(plan).await?);
            }
            let mut skipped =
                vec!["url skipped: no --database-url, database.url or DATABASE_URL".to_string()];
            match container::check_available(&plan.image).await {
                Ok(()) => return Ok(with_skipped(start_container(plan).await?, skipped)),
                Err(e) => skipped.push(format!("container skipped: image {}: {e:#}", plan.image)),
            }
            match local_binaries(plan.engine) {
                Ok(_) => return Ok(with_skipped(start_local(plan).await?, skipped)),
                Err(e) => skipped.push(format!("local skipped: {e:#}")),
            }
            Err(anyhow!(
                "no {} server available; tried {}. Install Docker and {}",
                plan.engine.label(),
                skipped.join("; "),
                container_alternatives(plan.engine, &plan.image)
            )
            .into())
        }
    }
}

fn with_skipped(mut server: Server, skipped: Vec<String>) -> Server {
    server.skipped = skipped;
    server
}

async fn server_version(conn: &mut Conn) -> Result<String> {
    let v: String = match conn {
        Conn::Postgres(c) => sqlx::query_scalar("SELECT version()").fetch_one(c).await?,
        Conn::Mariadb(c) => {
            let v: String = sqlx::query_scalar("SELECT version()").fetch_one(c).await?;
            format!("MariaDB {v}")
        }
    };
    Ok(v)
}

async fn from_url(plan: &DatabasePlan) -> Result<Server> {
    let url = plan.url.as_deref().unwrap_or_default();
    // The plan has checked the URL's syntax (and refused settings on a MariaDB url).
    let parsed = ServerOptions::from_url(plan.engine, url)
        .with_context(|| format!("parsing {}", redact_url(url)))?;
    // On a server we do not own, settings can only be session settings.
    let options = match parsed {
        ServerOptions::Postgres(o) => ServerOptions::Postgres(
            harness_options(o).options(plan.settings.iter().map(|(k, v)| (k.as_str(), v.as_str()))),
        ),
        ServerOptions::Mariadb(o) => ServerOptions::Mariadb(connect::mariadb_harness_options(o)),
    };
    // A given server should already be up: retry it for at most URL_READY_TIMEOUT.
    let mut conn = connect::wait_until_ready(
        &options,
        plan.startup_timeout.min(URL_READY_TIMEOUT),
        connect::Unknown,
    )
    .await
    .with_context(|| format!("connecting to {}", redact_url(url)))?;
    let version = server_version(&mut conn).await?;
    conn.close().await.ok();
    Ok(Server {
        provider: ProviderKind::Url,
        description: redact_url(url),
        version,
        skipped: Vec::new(),
        options,
        owned: Owned::Nothing,
    })
}

async fn start_container(plan: &DatabasePlan) -> Result<Server> {
    let (c, options, mut conn) = container::start(
        plan.engine,
        &plan.image,
        &plan.settings,
        plan.startup_timeout,
    )
    .await?;
    let version = server_version(&mut conn).await?;
    conn.close().await.ok();
    Ok(Server {
        provider: ProviderKind::Container,
        description: format!(
            "container {} from {}",
            &c.id()[..12.min(c.id().len())],
            c.image
        ),
        version,
        skipped: Vec::new(),
        options,
        owned: Owned::Container(Box::new(c)),
    })
}

async fn start_local(plan: &DatabasePlan) -> Result<Server> {
    let (l, options, mut conn) =
        local::start(plan.engine, &plan.settings, plan.startup_timeout).await?;
    let version = server_version(&mut conn).await?;
    conn.close().await.ok();
    Ok(Server {
        provider: ProviderKind::Local,
        description: format!(
            "local server in {} (binaries {})",
            l.data_dir().display(),
            l.bin_dir.display()
        ),
        version,
        skipped: Vec::new(),
        options,
        owned: Owned::Local(std::sync::Mutex::new(l)),
    })
}

/// Settings that shape a benchmark's results, recorded with every run.
const KEY_SETTINGS: &str = "
SELECT name, setting || COALESCE(unit, '')
FROM   pg_settings
WHERE  name IN ('shared_buffers', 'synchronous_commit', 'fsync', 'wal_level', 'max_connections', 'work_mem',
                'autovacuum', 'autovacuum_naptime', 'autovacuum_vacuum_scale_factor', 'autovacuum_vacuum_threshold',
                'autovacuum_vacuum_cost_limit', 'idle_in_transaction_session_timeout', 'checkpoint_timeout', 'max_wal_size')
ORDER  BY name";

/// The same for MariaDB: what decides durability, buffering, locking and purge.
const MARIADB_KEY_SETTINGS: &str = "
SELECT LOWER(VARIABLE_NAME), VARIABLE_VALUE
FROM   information_schema.GLOBAL_VARIABLES
WHERE  VARIABLE_NAME IN ('INNODB_BUFFER_POOL_SIZE', 'INNODB_FLUSH_LOG_AT_TRX_COMMIT', 'SYNC_BINLOG',
                         'LOG_BIN', 'MAX_CONNECTIONS', 'TX_ISOLATION', 'INNODB_AUTOINC_LOCK_MODE',
                         'INNODB_LOCK_WAIT_TIMEOUT', 'INNODB_PURGE_THREADS', 'INNODB_LOG_FILE_SIZE')
UNION ALL
SELECT 'tx_isolation (the run''s sessions)', @@SESSION.tx_isolation
ORDER  BY 1";

/// The server's values of the settings that shape results (`meta.postgres_settings`).
pub async fn server_settings(
    conn: &mut Conn,
) -> Result<std::collections::BTreeMap<String, String>> {
    let rows: Vec<(String, String)> = match conn {
        Conn::Postgres(c) => sqlx::query_as(KEY_SETTINGS).fetch_all(c).await?,
        Conn::Mariadb(c) => sqlx::query_as(MARIADB_KEY_SETTINGS).fetch_all(c).await?,
    };
    Ok(rows.into_iter().collect())
}

/// A connection string with every password replaced by `***`, for messages and saved files.
/// Covers the forms libpq and sqlx accept: URL userinfo (`scheme://user:pw@`, also without
/// the `//`), URL query parameters and `key=value` strings (`password=`, `sslpassword=`,
/// quoted or not), and strings that fail to parse as either.
pub fn redact_url(url: &str) -> String {
    mask_userinfo(&mask_password_values(url))
}

/// `…password=VALUE…` → `…password=***…`, the value ending at `&`, whitespace or the end,
/// or at its closing quote when quoted.
fn mask_password_values(s: &str) -> String {
    let lower = s.to_ascii_lowercase();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while let Some(found) = lower[i..].find("password=") {
        let value = i + found + "password=".len();
        out.push_str(&s[i..value]);
        out.push_str("***");
        let rest = &s[value..];
        let len = if let Some(quoted) = rest.strip_prefix('\'') {
            let mut end = quoted.len();
            let mut chars = quoted.char_indices();
            while let Some((k, c)) = chars.next() {
                match c {
                    '\\' => {
                        chars.next();
                    }
                    '\'' => {
                        end = k + 1;
                        break;
                    }
                    _ => {}
                }
            }
            1 + end
        } else {
            rest.find(|c: char| c == '&' || c.is_whitespace())
                .unwrap_or(rest.len())
        };
        i = value + len;
    }
    out.push_str(&s[i..]);
    out
}

/// `scheme://user:pw@host…` (or `scheme:user:pw@host…`) → `scheme://user:***@host…`.
fn mask_userinfo(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once(':') else {
        return url.to_string();
    };
    let slashes = if rest.starts_with("//") { "//" } else { "" };
    let rest = &rest[slashes.len()..];
    let Some((userinfo, host)) = rest.rsplit_once('@') else {
        return url.to_string();
    };
    if userinfo.contains(char::is_whitespace) {
        return url.to_string();
    }
    match userinfo.split_once(':') {
        Some((user, pw)) if pw != "***" => format!("{scheme}:{slashes}{user}:***@{host}"),
        _ => url.to_string(),
    }
}

/// A TCP port on 127.0.0.1 that nothing listens on right now.
fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

/// The last `n` non-empty lines of a log, joined with " | " (errors stay on one line).
fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = &lines[lines.len().saturating_sub(n)..];
    if tail.is_empty() {
        "(empty)".to_string()
    } else {
        tail.join(" | ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_masked() {
        let cases = [
            (
                "postgres://u:secret@h:5432/db",
                "postgres://u:***@h:5432/db",
            ),
            ("postgres://u@h/db", "postgres://u@h/db"),
            ("postgres://h/db", "postgres://h/db"),
            (
                "postgres://u@h/db?password=secret&sslmode=require",
                "postgres://u@h/db?password=***&sslmode=require",
            ),
            (
                "postgres://h/db?sslpassword=secret",
                "postgres://h/db?sslpassword=***",
            ),
            (
                "host=h user=u password=secret dbname=d",
                "host=h user=u password=*** dbname=d",
            ),
            (
                "host=h PASSWORD='se cr\\'et' dbname=d",
                "host=h PASSWORD=*** dbname=d",
            ),
            ("postgres:u:secret@h/db", "postgres:u:***@h/db"),
            ("postgresql://u:p%40ss@h/db", "postgresql://u:***@h/db"),
            ("password=", "password=***"),
        ];
        for (given, masked) in cases {
            assert_eq!(redact_url(given), masked, "{given}");
            assert!(!redact_url(given).contains("secret"), "{given}");
        }
    }
}
