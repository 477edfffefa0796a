//! How the providers make a MariaDB server: a throwaway server from this machine's
//! `mariadb-install-db` and `mariadbd` (local), or a container of an image that behaves like
//! the official `mariadb`.

use super::MariaEndpoint;
use crate::backend::seam::{ContainerImage, Endpoint, LocalBinaries, LocalServer, Ports};
use anyhow::{Result, anyhow};
use sqlx::mysql::MySqlConnectOptions;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

pub struct Local;
pub static LOCAL: Local = Local;

impl LocalServer for Local {
    fn program(&self) -> &'static str {
        "mariadbd"
    }

    fn account(&self) -> &'static str {
        "mysql"
    }

    /// `DBQ_MARIADB_BINDIR` when set, else the directories Debian installs them in, and PATH.
    fn binaries(&self) -> Result<LocalBinaries> {
        let dirs = LocalBinaries::search_dirs(
            "DBQ_MARIADB_BINDIR",
            &["/usr/sbin", "/usr/bin", "/usr/local/bin", "/usr/local/sbin"],
        );
        let server = dirs.iter().find(|d| d.join("mariadbd").is_file());
        let install = dirs
            .iter()
            .map(|d| d.join("mariadb-install-db"))
            .find(|p| p.is_file());
        match (server, install) {
            (Some(s), Some(i)) => Ok(LocalBinaries {
                bin_dir: s.clone(),
                init: i,
            }),
            _ => Err(anyhow!(
                "no mariadbd and mariadb-install-db found (DBQ_MARIADB_BINDIR, /usr/sbin, /usr/bin or PATH); install them with `apt-get install mariadb-server`"
            )),
        }
    }

    fn init(&self, bins: &LocalBinaries, dir: &Path) -> Command {
        let mut cmd = Command::new(&bins.init);
        // A temporary directory of its own: two installs at once in the shared /tmp can
        // collide on a temporary table's name ("Unknown table 'mysql.tmp_user_sys'").
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", dir.join("data").display()))
            .arg(format!("--tmpdir={}", dir.display()))
            .args([
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
                "--skip-name-resolve",
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
        let mut cmd = Command::new(bins.bin_dir.join("mariadbd"));
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", dir.join("data").display()))
            .arg(format!("--port={port}"))
            .arg(format!("--tmpdir={}", dir.display()))
            .arg(format!("--socket={}", dir.join("mariadb.sock").display()))
            .arg(format!("--pid-file={}", dir.join("mariadb.pid").display()))
            .args(["--bind-address=127.0.0.1", "--skip-name-resolve"]);
        for (k, v) in settings {
            cmd.arg(format!("--{k}={v}"));
        }
        cmd
    }

    /// mariadb-install-db makes root@127.0.0.1 without a password.
    fn endpoint(&self, ports: Ports) -> Arc<dyn Endpoint> {
        let port = ports.main;
        Arc::new(MariaEndpoint::new(
            MySqlConnectOptions::new()
                .host("127.0.0.1")
                .port(port)
                .username("root"),
        ))
    }

    fn stop_hint(&self, dir: &Path) -> String {
        format!("kill $(cat {}/mariadb.pid)", dir.display())
    }
}

pub struct Container;
pub static CONTAINER: Container = Container;

impl ContainerImage for Container {
    fn port(&self) -> u16 {
        3306
    }

    fn password_variable(&self) -> &'static str {
        "MARIADB_ROOT_PASSWORD"
    }

    /// `--key=value …`: the official image passes its arguments to `mariadbd`.
    fn command(
        &self,
        settings: &[(String, String)],
        _password: &str,
        _ports: Ports,
    ) -> Vec<String> {
        settings.iter().map(|(k, v)| format!("--{k}={v}")).collect()
    }

    fn endpoint(&self, ports: Ports, password: &str) -> Arc<dyn Endpoint> {
        let host_port = ports.main;
        Arc::new(MariaEndpoint::new(
            MySqlConnectOptions::new()
                .host("127.0.0.1")
                .port(host_port)
                .username("root")
                .password(password),
        ))
    }
}
