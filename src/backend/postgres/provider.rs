//! How the providers make a PostgreSQL server: a throwaway cluster from this machine's
//! `initdb` (local), or a container of an image that behaves like the official `postgres`.

use super::Pg;
use crate::backend::seam::{ContainerImage, Endpoint, LocalBinaries, LocalServer, Ports};
use crate::version::ServerVersion;
use crate::backend::sql::driver::{ImageRecipe, SqlContainer, SqlServers, superuser_endpoint, server_args};
use nix::sys::signal::Signal;
use std::str::FromStr;
use anyhow::{Result, anyhow};
use sqlx::postgres::PgConnectOptions;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

pub struct Local;

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

    /// Debian installs each major version side by side: `/usr/lib/postgresql/<major>/bin`
    /// (`DBQ_PG_BINDIR`, when set, is taken as given and the server's version checked).
    fn binaries_of(&self, version: &ServerVersion) -> Result<LocalBinaries> {
        if std::env::var_os("DBQ_PG_BINDIR").is_some_and(|d| !d.is_empty()) {
            return self.binaries();
        }
        let major = version.as_str().split('.').next().unwrap_or_default();
        let dir = Path::new("/usr/lib/postgresql").join(major).join("bin");
        if dir.join("initdb").is_file() && dir.join("postgres").is_file() {
            return Ok(LocalBinaries {
                init: dir.join("initdb"),
                bin_dir: dir,
            });
        }
        let installed: Vec<String> = installed_majors().iter().map(u32::to_string).collect();
        Err(anyhow!(
            "no PostgreSQL {version} here: {} holds no initdb and postgres (installed: {}); `apt-get install postgresql-{major}` where the Debian release packages it, or use --db container",
            dir.display(),
            if installed.is_empty() { "none".to_string() } else { installed.join(", ") }
        ))
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
            .args(["-c", "listen_addresses=127.0.0.1"])
            .args(server_args::<Pg>(settings));
        cmd
    }

    fn endpoint(&self, ports: Ports) -> Arc<dyn Endpoint> {
        superuser_endpoint::<Pg>("127.0.0.1", ports.main, None)
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
    let versioned = installed_majors().into_iter().rev();
    candidates.extend(versioned.map(|v| Path::new("/usr/lib/postgresql").join(v.to_string()).join("bin")));
    candidates
        .into_iter()
        .find(|d| d.join("initdb").is_file() && d.join("postgres").is_file())
        .ok_or_else(|| {
            anyhow!(
                "no initdb/postgres found on PATH or under /usr/lib/postgresql/*/bin (`apt-get install postgresql`)"
            )
        })
}

/// The major versions under /usr/lib/postgresql (Debian's side-by-side installs), lowest first.
fn installed_majors() -> Vec<u32> {
    let mut majors: Vec<u32> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|v: &u32| Path::new("/usr/lib/postgresql").join(v.to_string()).join("bin/initdb").is_file())
        .collect();
    majors.sort_unstable();
    majors
}

impl SqlServers for Pg {
    /// The official `postgres` image runs `postgres -c key=value …`.
    const IMAGE: ImageRecipe = ImageRecipe {
        port: 5432,
        password_variable: "POSTGRES_PASSWORD",
        program: &["postgres"],
        // A fast shutdown: open transactions roll back, a checkpoint, exit; immediate:
        // exit at once, crash recovery on the next start.
        fast: Signal::SIGINT,
        immediate: Signal::SIGQUIT,
    };
    const LOCAL: &'static dyn LocalServer = &Local;
    const CONTAINER: &'static dyn ContainerImage = &SqlContainer::<Pg>::new();

    fn setting_args(key: &str, value: &str) -> Vec<String> {
        vec!["-c".into(), format!("{key}={value}")]
    }

    fn superuser(host: &str, port: u16, password: Option<&str>) -> PgConnectOptions {
        let options = PgConnectOptions::new_without_pgpass()
            .host(host)
            .port(port)
            .username("postgres")
            .database("postgres");
        match password {
            Some(password) => options.password(password),
            None => options,
        }
    }

    fn parse(url: &str) -> sqlx::Result<PgConnectOptions> {
        PgConnectOptions::from_str(url)
    }

    /// On a server the run does not own, settings can only be session settings.
    fn with_session_settings(
        options: PgConnectOptions,
        settings: &[(String, String)],
    ) -> PgConnectOptions {
        options.options(settings.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }
}
