//! The engine seam: one connection type and one set of connection options for either
//! engine. Code that works on both (fleets, the queue, the proof, the sampler) holds a
//! [`Conn`]; what only one engine has is reached by matching on it, in the module that owns
//! that behaviour.

use crate::scenario::Engine;
use sqlx::mysql::{MySqlConnectOptions, MySqlConnection};
use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{ConnectOptions, Connection};
use std::str::FromStr;

/// An open connection to the server of the run.
pub enum Conn {
    Postgres(PgConnection),
    Mariadb(MySqlConnection),
}

impl Conn {
    pub fn engine(&self) -> Engine {
        match self {
            Conn::Postgres(_) => Engine::Postgres,
            Conn::Mariadb(_) => Engine::Mariadb,
        }
    }

    /// Runs statements that take no parameters and return nothing (`BEGIN`, `COMMIT`, DDL),
    /// as one simple query.
    pub async fn execute(&mut self, sql: &str) -> sqlx::Result<()> {
        let sql = sqlx::AssertSqlSafe(sql);
        match self {
            Conn::Postgres(c) => sqlx::raw_sql(sql).execute(c).await.map(drop),
            Conn::Mariadb(c) => sqlx::raw_sql(sql).execute(c).await.map(drop),
        }
    }

    pub async fn close(self) -> sqlx::Result<()> {
        match self {
            Conn::Postgres(c) => c.close().await,
            Conn::Mariadb(c) => c.close().await,
        }
    }

    /// The PostgreSQL connection, for what only PostgreSQL has.
    pub fn postgres(&mut self) -> Option<&mut PgConnection> {
        match self {
            Conn::Postgres(c) => Some(c),
            Conn::Mariadb(_) => None,
        }
    }
}

/// How to reach a server of either engine.
#[derive(Debug, Clone)]
pub enum ServerOptions {
    Postgres(PgConnectOptions),
    Mariadb(MySqlConnectOptions),
}

/// The URL schemes each engine accepts.
pub fn url_schemes(engine: Engine) -> &'static [&'static str] {
    match engine {
        Engine::Postgres => &["postgres", "postgresql"],
        Engine::Mariadb => &["mariadb", "mysql"],
    }
}

impl ServerOptions {
    /// Parses a server URL for `engine` (`mariadb://` is read as `mysql://`).
    pub fn from_url(engine: Engine, url: &str) -> sqlx::Result<ServerOptions> {
        Ok(match engine {
            Engine::Postgres => ServerOptions::Postgres(PgConnectOptions::from_str(url)?),
            Engine::Mariadb => {
                let url = match url.split_once("://") {
                    Some((scheme, rest)) if scheme.eq_ignore_ascii_case("mariadb") => {
                        format!("mysql://{rest}")
                    }
                    _ => url.to_string(),
                };
                ServerOptions::Mariadb(MySqlConnectOptions::from_str(&url)?)
            }
        })
    }

    pub fn engine(&self) -> Engine {
        match self {
            ServerOptions::Postgres(_) => Engine::Postgres,
            ServerOptions::Mariadb(_) => Engine::Mariadb,
        }
    }

    pub async fn connect(&self) -> sqlx::Result<Conn> {
        Ok(match self {
            ServerOptions::Postgres(o) => Conn::Postgres(PgConnection::connect_with(o).await?),
            ServerOptions::Mariadb(o) => Conn::Mariadb(MySqlConnection::connect_with(o).await?),
        })
    }

    /// A URL with the password, for worker processes (never shown: see `redact_url`).
    pub fn to_url(&self) -> String {
        match self {
            ServerOptions::Postgres(o) => {
                let mut url = o.to_url_lossy();
                if let Some(opts) = o.get_options() {
                    url.query_pairs_mut().append_pair("options", opts);
                }
                url.to_string()
            }
            ServerOptions::Mariadb(o) => o.to_url_lossy().to_string(),
        }
    }

    /// `user@host:port/database`, without the password, for messages.
    pub fn address(&self) -> String {
        match self {
            ServerOptions::Postgres(o) => format!(
                "postgres://{}@{}:{}/{}",
                o.get_username(),
                o.get_host(),
                o.get_port(),
                o.get_database().unwrap_or("postgres")
            ),
            ServerOptions::Mariadb(o) => format!(
                "mysql://{}@{}:{}/{}",
                o.get_username(),
                o.get_host(),
                o.get_port(),
                o.get_database().unwrap_or("")
            ),
        }
    }
}
