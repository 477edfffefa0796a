//! How the providers make a MariaDB server: a throwaway server from this machine's
//! `mariadb-install-db` and `mariadbd` (local), or a container of an image that behaves like
//! the official `mariadb`.

use super::Maria;
use crate::backend::seam::{ContainerImage, Endpoint, LocalBinaries, LocalServer, Ports};
use crate::version::ServerVersion;
use crate::backend::sql::driver::{ImageRecipe, SqlContainer, SqlServers, superuser_endpoint, server_args};
use nix::sys::signal::Signal;
use std::str::FromStr;
use anyhow::{Result, anyhow};
use sqlx::mysql::MySqlConnectOptions;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

pub struct Local;

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

    /// Debian installs one MariaDB at a time: the binaries found, if `mariadbd --version`
    /// says they are `version`.
    fn binaries_of(&self, version: &ServerVersion) -> Result<LocalBinaries> {
        let bins = self.binaries()?;
        let server = bins.bin_dir.join("mariadbd");
        let out = Command::new(&server)
            .arg("--version")
            .output()
            .map_err(|e| anyhow!("running {} --version: {e}", server.display()))?;
        let words = String::from_utf8_lossy(&out.stdout);
        // `mariadbd  Ver 11.8.3-MariaDB-0+deb13u1 for debian-linux-gnu on x86_64`
        let number = words.split_whitespace().skip(1).find_map(|w| crate::version::number_in(w));
        match number {
            Some(n) if version.agrees_with(n) => Ok(bins),
            found => Err(anyhow!(
                "no MariaDB {version} here: {} is {} (Debian installs one MariaDB at a time; point DBQ_MARIADB_BINDIR at another, or use --db container)",
                server.display(),
                found.unwrap_or("of an unknown version")
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
            .args(["--bind-address=127.0.0.1", "--skip-name-resolve"])
            .args(server_args::<Maria>(settings));
        cmd
    }

    fn endpoint(&self, ports: Ports) -> Arc<dyn Endpoint> {
        superuser_endpoint::<Maria>("127.0.0.1", ports.main, None)
    }

    fn stop_hint(&self, dir: &Path) -> String {
        format!("kill $(cat {}/mariadb.pid)", dir.display())
    }
}

impl SqlServers for Maria {
    /// The official `mariadb` image passes its arguments (`--key=value …`) to `mariadbd`.
    const IMAGE: ImageRecipe = ImageRecipe {
        port: 3306,
        password_variable: "MARIADB_ROOT_PASSWORD",
        program: &[],
        fast: Signal::SIGTERM,
        immediate: Signal::SIGKILL,
    };
    const LOCAL: &'static dyn LocalServer = &Local;
    const CONTAINER: &'static dyn ContainerImage = &SqlContainer::<Maria>::new();

    fn setting_args(key: &str, value: &str) -> Vec<String> {
        vec![format!("--{key}={value}")]
    }

    /// mariadb-install-db makes root@127.0.0.1 without a password.
    fn superuser(host: &str, port: u16, password: Option<&str>) -> MySqlConnectOptions {
        let options = MySqlConnectOptions::new()
            .host(host)
            .port(port)
            .username("root");
        match password {
            Some(password) => options.password(password),
            None => options,
        }
    }

    /// Reads `mariadb://` as `mysql://`.
    fn parse(url: &str) -> sqlx::Result<MySqlConnectOptions> {
        let url = match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("mariadb") => {
                format!("mysql://{rest}")
            }
            _ => url.to_string(),
        };
        MySqlConnectOptions::from_str(&url)
    }
}
