//! How the providers make a PostgreSQL server: a throwaway cluster from this machine's
//! `initdb` (local), or a container of an image that behaves like the official `postgres`.

use super::PgEndpoint;
use crate::backend::seam::{ContainerImage, Endpoint, LocalBinaries, LocalServer, Ports};
use anyhow::{Result, anyhow};
use sqlx::postgres::PgConnectOptions;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

pub struct Local;
pub static LOCAL: Local = Local;

impl LocalServer for Local {
    fn program(&self) -> &'static str {
        "postgres"
    }

    fn account(&self) -> &'static str {
        "postgres"
    }

    /// `DBQ_PG_BINDIR` when set (and then only it), else `initdb` on PATH (symlinks
    /// resolved), else the newest `/usr/lib/postgresql/*/bin`.
    fn binaries(&self) -> Result<LocalBinaries> {
        let dir = find_bin_dir()?;
        Ok(LocalBinaries {
            init: dir.join("initdb"),
            bin_dir: dir,
        })
    }

    fn init(&self, bins: &LocalBinaries, dir: &Path) -> Command {
        let mut cmd = Command::new(&bins.init);
        cmd.arg("-D").arg(dir.join("data")).args([
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        ]);
        cmd
    }

    fn serve(
        &self,
        bins: &LocalBinaries,
        dir: &Path,
        ports: Ports,
        settings: &[(String, String)],
    ) -> Command {
        let port = ports.main;
        let mut cmd = Command::new(bins.bin_dir.join("postgres"));
        cmd.arg("-D")
            .arg(dir.join("data"))
            .arg("-p")
            .arg(port.to_string())
            .arg("-k")
            .arg(dir)
            .args(["-c", "listen_addresses=127.0.0.1"]);
        for (k, v) in settings {
            cmd.arg("-c").arg(format!("{k}={v}"));
        }
        cmd
    }

    fn endpoint(&self, ports: Ports) -> Arc<dyn Endpoint> {
        let port = ports.main;
        Arc::new(PgEndpoint::new(
            PgConnectOptions::new_without_pgpass()
                .host("127.0.0.1")
                .port(port)
                .username("postgres")
                .database("postgres"),
        ))
    }

    fn stop_hint(&self, dir: &Path) -> String {
        // Debian keeps pg_ctl off PATH, in the version's bin directory.
        let pg_ctl = find_bin_dir().map_or(PathBuf::from("pg_ctl"), |d| d.join("pg_ctl"));
        format!(
            "{} -D {} stop",
            pg_ctl.display(),
            dir.join("data").display()
        )
    }
}

fn find_bin_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("DBQ_PG_BINDIR").filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        return if dir.join("initdb").is_file() && dir.join("postgres").is_file() {
            Ok(dir)
        } else {
            Err(anyhow!(
                "DBQ_PG_BINDIR={} holds no initdb and postgres",
                dir.display()
            ))
        };
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("initdb"))
        .find(|p| p.is_file())
        .and_then(|p| std::fs::canonicalize(p).ok())
        .and_then(|p| p.parent().map(Path::to_path_buf));
    let mut candidates: Vec<PathBuf> = on_path.into_iter().collect();
    let mut versioned: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            Some((v, e.path().join("bin")))
        })
        .collect();
    versioned.sort_by_key(|v| std::cmp::Reverse(v.0));
    candidates.extend(versioned.into_iter().map(|(_, p)| p));
    candidates
        .into_iter()
        .find(|d| d.join("initdb").is_file() && d.join("postgres").is_file())
        .ok_or_else(|| {
            anyhow!(
                "no initdb/postgres found on PATH or under /usr/lib/postgresql/*/bin (`apt-get install postgresql`)"
            )
        })
}

pub struct Container;
pub static CONTAINER: Container = Container;

impl ContainerImage for Container {
    fn port(&self) -> u16 {
        5432
    }

    fn password_variable(&self) -> &'static str {
        "POSTGRES_PASSWORD"
    }

    /// `postgres -c key=value …`: the official image passes the arguments to the server.
    fn command(
        &self,
        settings: &[(String, String)],
        _password: &str,
        _ports: Ports,
    ) -> Vec<String> {
        let mut cmd = vec!["postgres".to_string()];
        for (k, v) in settings {
            cmd.push("-c".into());
            cmd.push(format!("{k}={v}"));
        }
        cmd
    }

    fn endpoint(&self, ports: Ports, password: &str) -> Arc<dyn Endpoint> {
        let host_port = ports.main;
        Arc::new(PgEndpoint::new(
            PgConnectOptions::new_without_pgpass()
                .host("127.0.0.1")
                .port(host_port)
                .username("postgres")
                .password(password)
                .database("postgres"),
        ))
    }
}
