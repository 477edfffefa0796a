//! The `container` provider: a PostgreSQL or MariaDB container started with testcontainers.
//!
//! The image must behave like the official one: `postgres` (POSTGRES_PASSWORD, a
//! `postgres` command whose extra `-c key=value` arguments reach the server) or `mariadb`
//! (MARIADB_ROOT_PASSWORD, `--key=value` arguments passed to `mariadbd`). On machines
//! without a registry, `docker/build-postgres-image.sh` and `docker/build-mariadb-image.sh`
//! build such images from Debian packages.

use super::connect::{Liveness, harness_options, mariadb_harness_options, wait_until_ready};
use super::engine::{Conn, ServerOptions};
use crate::scenario::{Engine, ShutdownMode};
use anyhow::{Context, Result, anyhow, bail};
use sqlx::mysql::MySqlConnectOptions;
use sqlx::postgres::PgConnectOptions;
use std::time::Duration;
use testcontainers::bollard::Docker;
use testcontainers::bollard::query_parameters::KillContainerOptionsBuilder;
use testcontainers::core::{IntoContainerPort, WaitFor};
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, ContainerRequest, GenericImage, ImageExt};

/// A running database container owned by the run.
pub struct DbContainer {
    container: ContainerAsync<GenericImage>,
    engine: Engine,
    pub image: String,
}

impl DbContainer {
    pub fn id(&self) -> &str {
        self.container.id()
    }

    /// Stops the server in the container (signals as for the local provider, sent to its
    /// main process), waits until the container has stopped, stays down `down_for`, and
    /// starts the container again. Its host port is fixed, so the address does not change.
    pub async fn restart(&self, mode: ShutdownMode, down_for: Duration) -> Result<()> {
        let docker =
            Docker::connect_with_defaults().map_err(|e| anyhow!("no Docker client: {e}"))?;
        let signal = match (self.engine, mode) {
            (Engine::Postgres, ShutdownMode::Fast) => "SIGINT",
            (Engine::Postgres, ShutdownMode::Immediate) => "SIGQUIT",
            (Engine::Mariadb, ShutdownMode::Fast) => "SIGTERM",
            (Engine::Mariadb, ShutdownMode::Immediate) => "SIGKILL",
        };
        let options = KillContainerOptionsBuilder::new().signal(signal).build();
        docker
            .kill_container(self.id(), Some(options))
            .await
            .context("signalling the container")?;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while self.container.is_running().await.unwrap_or(false) {
            if tokio::time::Instant::now() > deadline {
                bail!("the container did not stop within 30s after {signal}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(down_for).await;
        self.container
            .start()
            .await
            .context("starting the container again")?;
        Ok(())
    }

    /// Stops and removes the container.
    pub async fn remove(self) -> Result<()> {
        let id = self.container.id().to_string();
        self.container
            .rm()
            .await
            .with_context(|| format!("removing container {id}"))
    }
}

impl Liveness for &DbContainer {
    async fn check(&mut self) -> Result<()> {
        (&self.container).check().await
    }
}

impl Liveness for &ContainerAsync<GenericImage> {
    async fn check(&mut self) -> Result<()> {
        if self.is_running().await.unwrap_or(false) {
            Ok(())
        } else {
            Err(anyhow!("the container exited"))
        }
    }
}

/// Splits `registry:5000/library/postgres:17` into name and tag (`latest` when absent).
fn split_image(image: &str) -> (String, String) {
    let slash = image.rfind('/').map_or(0, |i| i + 1);
    match image[slash..].rfind(':') {
        Some(i) => (
            image[..slash + i].to_string(),
            image[slash + i + 1..].to_string(),
        ),
        None => (image.to_string(), "latest".to_string()),
    }
}

/// The server's port inside the container.
fn port(engine: Engine) -> u16 {
    match engine {
        Engine::Postgres => 5432,
        Engine::Mariadb => 3306,
    }
}

fn request(
    engine: Engine,
    image: &str,
    password: &str,
    settings: &[(String, String)],
    host_port: u16,
) -> ContainerRequest<GenericImage> {
    let (name, tag) = split_image(image);
    let (password_var, cmd) = match engine {
        Engine::Postgres => {
            let mut cmd = vec!["postgres".to_string()];
            for (k, v) in settings {
                cmd.push("-c".into());
                cmd.push(format!("{k}={v}"));
            }
            ("POSTGRES_PASSWORD", cmd)
        }
        Engine::Mariadb => (
            "MARIADB_ROOT_PASSWORD",
            settings.iter().map(|(k, v)| format!("--{k}={v}")).collect(),
        ),
    };
    let inner = port(engine).tcp();
    GenericImage::new(name, tag)
        .with_exposed_port(inner)
        // Readiness is checked by connecting (see `wait_until_ready`), not by log lines: the
        // official images print their "ready" line twice, once for a socket-only init
        // server.
        .with_wait_for(WaitFor::Nothing)
        .with_env_var(password_var, password)
        .with_label("dbq-bench", engine.as_str())
        // A fixed host port keeps the address stable if the container is restarted.
        .with_mapped_port(host_port, inner)
        .with_cmd(cmd)
}

/// Whether this provider can work here: a Docker engine answers and the image is present or
/// can be pulled. The error says which of the two failed.
pub async fn check_available(image: &str) -> Result<()> {
    let docker = Docker::connect_with_defaults().map_err(|e| anyhow!("no Docker client: {e}"))?;
    tokio::time::timeout(Duration::from_secs(5), docker.ping())
        .await
        .map_err(|_| anyhow!("the Docker engine did not answer within 5s"))?
        .map_err(|e| anyhow!("the Docker engine does not answer: {e}"))?;
    if docker.inspect_image(image).await.is_ok() {
        return Ok(());
    }
    request(Engine::Postgres, image, "unused", &[], 0)
        .pull_image()
        .await
        .map(|_| ())
        .map_err(|e| anyhow!("image {image} is not present and cannot be pulled: {e}"))
}

/// Starts a container from `image` with `settings` as `-c` arguments and waits until it
/// accepts connections.
pub async fn start(
    engine: Engine,
    image: &str,
    settings: &[(String, String)],
    timeout: Duration,
) -> Result<(DbContainer, ServerOptions, Conn)> {
    let password = format!("dbq{:016x}", rand::random::<u64>());
    let host_port = super::free_port()?;
    let container = request(engine, image, &password, settings, host_port)
        .with_startup_timeout(timeout)
        .start()
        .await
        .with_context(|| format!("starting a container from image {image}"))?;
    let options = match engine {
        Engine::Postgres => ServerOptions::Postgres(harness_options(
            PgConnectOptions::new_without_pgpass()
                .host("127.0.0.1")
                .port(host_port)
                .username("postgres")
                .password(&password)
                .database("postgres"),
        )),
        Engine::Mariadb => ServerOptions::Mariadb(mariadb_harness_options(
            MySqlConnectOptions::new()
                .host("127.0.0.1")
                .port(host_port)
                .username("root")
                .password(&password),
        )),
    };
    let ready = wait_until_ready(&options, timeout, &container).await;
    match ready {
        Ok(conn) => Ok((
            DbContainer {
                container,
                engine,
                image: image.to_string(),
            },
            options,
            conn,
        )),
        Err(e) => {
            let log = container.stderr_to_vec().await.unwrap_or_default();
            let tail = super::last_lines(&String::from_utf8_lossy(&log), 3);
            container.rm().await.ok();
            bail!("{e:#}; container log: {tail}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::split_image;

    #[test]
    fn image_references_split_into_name_and_tag() {
        let s = |i: &str| split_image(i);
        assert_eq!(s("postgres:17"), ("postgres".into(), "17".into()));
        assert_eq!(s("postgres"), ("postgres".into(), "latest".into()));
        assert_eq!(
            s("reg:5000/lib/pg:15-x"),
            ("reg:5000/lib/pg".into(), "15-x".into())
        );
        assert_eq!(
            s("reg:5000/lib/pg"),
            ("reg:5000/lib/pg".into(), "latest".into())
        );
    }
}
