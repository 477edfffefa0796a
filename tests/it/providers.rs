//! Each provider starts a server, serves, and tears down what it started.

use crate::support::{SMALL, plan, sql};
use dbq_bench::backend::{self, Backend};
use dbq_bench::provider::{Server, provision};
use dbq_bench::scenario::{DatabasePlan, Engine, ProviderKind};
use sqlx::Connection;
use sqlx::postgres::PgConnection;
use std::sync::Arc;
use std::time::Duration;

fn db_plan(provider: ProviderKind) -> DatabasePlan {
    DatabasePlan {
        engine: Engine::Postgres,
        provider,
        image: match provider {
            ProviderKind::Container => crate::support::require_image(),
            _ => "postgres:17".into(),
        },
        version: None,
        url: None,
        startup_timeout: Duration::from_secs(90),
        settings: vec![
            ("shared_buffers".into(), "48MB".into()),
            ("synchronous_commit".into(), "off".into()),
        ],
    }
}

/// A queue on the server, and a connection of the test's own to it.
async fn serve(server: &Server) -> (Arc<dyn Backend>, PgConnection) {
    let p = plan(SMALL, &[]);
    let queue = backend::install(&*server.endpoint(), "dbq_test", &p.queue, false)
        .await
        .unwrap();
    let conn = sql(&*queue).await;
    backend::release(&*queue);
    (queue, conn)
}

async fn show(conn: &mut PgConnection, setting: &str) -> String {
    sqlx::query_scalar("SELECT current_setting($1)")
        .bind(setting)
        .fetch_one(conn)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_provider_starts_serves_and_tears_down() {
    crate::support::require_local_binaries();
    let server = provision(&db_plan(ProviderKind::Local))
        .await
        .expect("local provider");
    assert_eq!(server.provider, ProviderKind::Local);
    assert!(
        server.version.starts_with("PostgreSQL"),
        "{}",
        server.version
    );
    let (_queue, mut conn) = serve(&server).await;
    // Scenario settings reach the server as -c arguments.
    assert_eq!(show(&mut conn, "shared_buffers").await, "48MB");
    assert_eq!(show(&mut conn, "synchronous_commit").await, "off");
    let data_dir = show(&mut conn, "data_directory").await;
    assert!(std::path::Path::new(&data_dir).exists());
    conn.close().await.ok();

    let endpoint = server.endpoint();
    server.teardown().await.unwrap();
    assert!(
        !std::path::Path::new(&data_dir).exists(),
        "{data_dir} was not removed"
    );
    assert!(endpoint.ping().await.is_err(), "the server still answers");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn container_provider_starts_serves_and_tears_down() {
    let plan = db_plan(ProviderKind::Container);
    let server = provision(&plan)
        .await
        .unwrap_or_else(|e| panic!("container provider with image {}: {e}", plan.image));
    assert_eq!(server.provider, ProviderKind::Container);
    let id = server.container_id().expect("a container").to_string();
    let (_queue, mut conn) = serve(&server).await;
    assert_eq!(show(&mut conn, "shared_buffers").await, "48MB");
    // The data directory, as the server names it, is a volume Docker mounted (the image
    // declares it, as the official image does), and the run's words say so.
    let data_dir = show(&mut conn, "data_directory").await;
    conn.close().await.ok();
    let docker = testcontainers::bollard::Docker::connect_with_defaults().unwrap();
    let c = docker.inspect_container(&id, None).await.unwrap();
    let volume = c
        .mounts
        .unwrap_or_default()
        .into_iter()
        .find(|m| m.destination.as_deref() == Some(data_dir.as_str()))
        .unwrap_or_else(|| panic!("{data_dir} is not a mount of container {id}"));
    assert_eq!(volume.typ.as_deref(), Some("volume"), "{volume:?}");
    let volume = volume.name.expect("a volume's name");
    assert_eq!(
        server.place.storage,
        format!("a Docker volume at {data_dir}")
    );
    // The run reaches the server on the container's own address, on a network of its own.
    let networks = c.network_settings.and_then(|n| n.networks).unwrap();
    let (network, at) = networks.iter().next().expect("a network");
    assert!(network.starts_with("dbq-bench-"), "{network}");
    let ip = at.ip_address.clone().unwrap();
    assert_eq!(
        server.place.route,
        format!("the container's own address {ip}:5432")
    );
    let network = network.clone();

    server.teardown().await.unwrap();
    assert!(
        docker.inspect_container(&id, None).await.is_err(),
        "container {id} still exists"
    );
    assert!(
        docker.inspect_volume(&volume).await.is_err(),
        "its volume {volume} still exists"
    );
    assert!(
        docker.inspect_network(&network, None).await.is_err(),
        "its network {network} still exists"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_says_what_it_tried_when_nothing_is_available() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args(["run", "scenarios/smoke.toml", "--db", "auto"])
        .env("DBQ_PG_BINDIR", "/nonexistent")
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .env_remove("DATABASE_URL")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(
        err.trim_end().ends_with(errors[0]),
        "the error is the last line: {err}"
    );
    assert!(
        err.contains("container skipped: image ") && err.contains("local skipped: DBQ_PG_BINDIR"),
        "expected the error to say why container and local were skipped; got: {err}"
    );
    assert!(
        err.contains("apt-get install postgresql") && err.contains("--database-url"),
        "{err}"
    );
}

/// `auto` says on stderr why it passed over each provider before the one it used.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_says_why_it_skipped_each_provider() {
    crate::support::require_local_binaries();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args(["run", "scenarios/smoke.toml", "--db", "auto", "--out"])
        .arg(tempfile::tempdir().unwrap().path())
        .args([
            "--set",
            "phases.0.duration=1s",
            "--set",
            "phases.1.duration=1s",
        ])
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .env_remove("DATABASE_URL")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "expected exit 0 on a local cluster; stderr: {err}"
    );
    for expected in [
        "dbq-bench: url skipped: no --database-url",
        "dbq-bench: container skipped: image ",
        "dbq-bench: local server in ",
    ] {
        assert!(
            err.lines().any(|l| l.starts_with(expected)),
            "expected a line starting {expected:?}; stderr: {err}"
        );
    }
}

/// An explicit `--db container` that cannot get its image names the image, the reason and
/// what to do instead, on one line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_container_start_names_the_image_and_the_alternatives() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args(["run", "scenarios/smoke.toml", "--db", "container"])
        .args(["--image", "dbq-bench-no-such-image:0"])
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    let line = err.lines().last().unwrap_or_default();
    for expected in [
        "error: container provider: image dbq-bench-no-such-image:0: ",
        "docker/build-postgres-image.sh",
        "--db local",
        "--database-url",
    ] {
        assert!(
            line.contains(expected),
            "expected {expected:?} in the last line; stderr: {err}"
        );
    }
}

/// A server setting a session cannot set, on a server named by URL, is refused at once in one
/// line naming the key and how to set it on the server (it used to wait out the url
/// provider's 10 s and end "the server did not accept connections"); a session setting runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_wide_setting_on_a_named_server_is_refused_at_once() {
    let url = crate::support::shared_url();
    let run = |setting: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
            .args(["run", "scenarios/smoke.toml", "--quiet", "--db", "url"])
            .args(["--database-url", url, "--set", setting])
            .output()
            .unwrap()
    };
    let out = run("database.settings.autovacuum_naptime=\"1s\"");
    crate::support::assert_bad_input(
        &out,
        "autovacuum_naptime on a named server",
        "database.settings.autovacuum_naptime: PostgreSQL applies it to the whole server \
         (context sighup)",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ALTER SYSTEM SET autovacuum_naptime = '1s'"),
        "{err}"
    );
    let out = run("database.settings.no_such_setting=\"1\"");
    crate::support::assert_bad_input(&out, "an unknown setting", "PostgreSQL has no such setting");
}
