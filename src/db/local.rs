//! The `local` provider: a throwaway server made with this machine's binaries (PostgreSQL's
//! `initdb`, MariaDB's `mariadb-install-db`), in a temporary directory, on a free port, run
//! as an unprivileged user when the harness runs as root (both servers refuse to run as
//! root). The directory is deleted when the server is stopped, including on errors and
//! Ctrl-C. The server is a child of the runner, so it can also be stopped and started again
//! (the `restart_server` fault).

use super::connect::{Liveness, harness_options, mariadb_harness_options, wait_until_ready};
use super::engine::{Conn, ServerOptions};
use crate::scenario::{Engine, ShutdownMode};
use anyhow::{Context, Result, anyhow, bail};
use nix::sys::signal::{Signal, kill};
use nix::unistd::{Gid, Pid, Uid, User, chown};
use sqlx::mysql::MySqlConnectOptions;
use sqlx::postgres::PgConnectOptions;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A server process running from a temporary data directory.
pub struct LocalCluster {
    engine: Engine,
    dir: Option<tempfile::TempDir>,
    child: Option<Child>,
    pub port: u16,
    /// Where the server's binaries are.
    pub bin_dir: PathBuf,
    settings: Vec<(String, String)>,
    user: Option<(Uid, Gid)>,
}

impl LocalCluster {
    pub fn data_dir(&self) -> PathBuf {
        self.dir
            .as_ref()
            .map(|d| d.path().join("data"))
            .unwrap_or_default()
    }

    fn log_path(&self) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.path().join("server.log"))
    }

    /// Starts the server on the existing data directory.
    fn spawn(&mut self) -> Result<()> {
        let dir = self
            .dir
            .as_ref()
            .context("the cluster was removed")?
            .path()
            .to_path_buf();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("server.log"))
            .context("opening the server log")?;
        let mut cmd = match self.engine {
            Engine::Postgres => {
                let mut cmd = Command::new(self.bin_dir.join("postgres"));
                cmd.arg("-D")
                    .arg(dir.join("data"))
                    .arg("-p")
                    .arg(self.port.to_string())
                    .arg("-k")
                    .arg(&dir)
                    .args(["-c", "listen_addresses=127.0.0.1"]);
                for (k, v) in &self.settings {
                    cmd.arg("-c").arg(format!("{k}={v}"));
                }
                cmd
            }
            Engine::Mariadb => {
                let mut cmd = Command::new(self.bin_dir.join("mariadbd"));
                cmd.arg("--no-defaults")
                    .arg(format!("--datadir={}", dir.join("data").display()))
                    .arg(format!("--port={}", self.port))
                    .arg(format!("--socket={}", dir.join("mariadb.sock").display()))
                    .arg(format!("--pid-file={}", dir.join("mariadb.pid").display()))
                    .args(["--bind-address=127.0.0.1", "--skip-name-resolve"]);
                for (k, v) in &self.settings {
                    cmd.arg(format!("--{k}={v}"));
                }
                cmd
            }
        };
        // Its own process group: a Ctrl-C at the terminal must not shut the server down
        // under the runner, which still needs it to write results.
        cmd.current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0);
        as_user(&mut cmd, self.user);
        let program = self.program();
        self.child = Some(cmd.spawn().with_context(|| format!("starting {program}"))?);
        Ok(())
    }

    fn program(&self) -> &'static str {
        match self.engine {
            Engine::Postgres => "postgres",
            Engine::Mariadb => "mariadbd",
        }
    }

    /// Whether the server is still running (an error says how it ended).
    pub fn check_alive(&mut self) -> Result<()> {
        let program = self.program();
        match self.child.as_mut().map(|c| c.try_wait()) {
            Some(Ok(None)) => Ok(()),
            Some(Ok(Some(status))) => Err(anyhow!("{program} exited ({status})")),
            Some(Err(e)) => Err(anyhow!("cannot watch the {program} process: {e}")),
            None => Err(anyhow!("{program} is not running")),
        }
    }

    /// Shuts the server down and waits up to 10 s before SIGKILL. `Fast`: SIGINT
    /// (PostgreSQL) or SIGTERM (MariaDB), a clean shutdown; `Immediate`: SIGQUIT
    /// (PostgreSQL) or SIGKILL (MariaDB), a crash that recovery repairs. Blocks; the data
    /// directory stays.
    pub fn shut_down(&mut self, mode: ShutdownMode) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let signal = match (self.engine, mode) {
            (Engine::Postgres, ShutdownMode::Fast) => Signal::SIGINT,
            (Engine::Postgres, ShutdownMode::Immediate) => Signal::SIGQUIT,
            (Engine::Mariadb, ShutdownMode::Fast) => Signal::SIGTERM,
            (Engine::Mariadb, ShutdownMode::Immediate) => Signal::SIGKILL,
        };
        let _ = kill(Pid::from_raw(child.id() as i32), signal);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Starts the postmaster again after [`LocalCluster::shut_down`].
    pub fn start_again(&mut self) -> Result<()> {
        self.spawn()
    }

    /// Fast shutdown, then removes the directory.
    pub fn stop(&mut self) {
        self.shut_down(ShutdownMode::Fast);
        if let Some(dir) = self.dir.take() {
            let _ = dir.close();
        }
    }

    /// The last lines of the server log, for error messages.
    pub fn log_tail(&self) -> String {
        let log = self
            .log_path()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_default();
        super::last_lines(&log, 3)
    }
}

impl Liveness for &mut LocalCluster {
    async fn check(&mut self) -> Result<()> {
        self.check_alive()
    }
}

impl Liveness for &std::sync::Mutex<LocalCluster> {
    async fn check(&mut self) -> Result<()> {
        self.lock()
            .map_err(|_| anyhow!("the local cluster lock is poisoned"))?
            .check_alive()
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Finds a directory holding `initdb` and `postgres`: `DBQ_PG_BINDIR` when set (and then
/// only it), else `initdb` on PATH (symlinks resolved), else the newest
/// `/usr/lib/postgresql/*/bin`.
pub fn find_binaries() -> Result<PathBuf> {
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
            anyhow!("no initdb/postgres found on PATH or under /usr/lib/postgresql/*/bin")
        })
}

/// The account the server runs as: ourselves, or when we are root the account Debian's
/// packages made for it (`postgres`, `mysql`) or else `nobody`.
fn server_user(engine: Engine) -> Result<Option<(Uid, Gid)>> {
    if !Uid::effective().is_root() {
        return Ok(None);
    }
    let own = match engine {
        Engine::Postgres => "postgres",
        Engine::Mariadb => "mysql",
    };
    for name in [own, "nobody"] {
        if let Ok(Some(u)) = User::from_name(name) {
            return Ok(Some((u.uid, u.gid)));
        }
    }
    bail!(
        "running as root and neither a `{own}` nor a `nobody` account exists to run the server as"
    )
}

/// Finds `mariadbd` and `mariadb-install-db`: `DBQ_MARIADB_BINDIR` when set, else the
/// directories Debian installs them in and PATH. Returns the directory of `mariadbd` and
/// the path of `mariadb-install-db`.
pub fn find_mariadb_binaries() -> Result<(PathBuf, PathBuf)> {
    let mut dirs: Vec<PathBuf> =
        match std::env::var_os("DBQ_MARIADB_BINDIR").filter(|d| !d.is_empty()) {
            Some(dir) => vec![PathBuf::from(dir)],
            None => ["/usr/sbin", "/usr/bin", "/usr/local/bin", "/usr/local/sbin"]
                .iter()
                .map(PathBuf::from)
                .chain(
                    std::env::var_os("PATH")
                        .into_iter()
                        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>()),
                )
                .collect(),
        };
    dirs.dedup();
    let server = dirs.iter().find(|d| d.join("mariadbd").is_file());
    let install = dirs
        .iter()
        .map(|d| d.join("mariadb-install-db"))
        .find(|p| p.is_file());
    match (server, install) {
        (Some(s), Some(i)) => Ok((s.clone(), i)),
        _ => Err(anyhow!(
            "no mariadbd and mariadb-install-db found (DBQ_MARIADB_BINDIR, /usr/sbin, /usr/bin or PATH); install them with `apt-get install mariadb-server`"
        )),
    }
}

fn as_user(cmd: &mut Command, user: Option<(Uid, Gid)>) -> &mut Command {
    if let Some((uid, gid)) = user {
        cmd.uid(uid.as_raw()).gid(gid.as_raw());
    }
    cmd
}

/// Makes and starts a server of `engine`, and waits until it accepts connections.
pub async fn start(
    engine: Engine,
    settings: &[(String, String)],
    timeout: Duration,
) -> Result<(LocalCluster, ServerOptions, Conn)> {
    let user = server_user(engine)?;
    let dir = tempfile::Builder::new()
        .prefix(match engine {
            Engine::Postgres => "dbq-bench-pg-",
            Engine::Mariadb => "dbq-bench-mariadb-",
        })
        .tempdir()
        .context("creating a temporary directory")?;
    if let Some((uid, gid)) = user {
        chown(dir.path(), Some(uid), Some(gid))
            .context("handing the temporary directory to the server account")?;
    }
    let bin_dir = initialise(engine, dir.path(), user).await?;
    let mut cluster = LocalCluster {
        engine,
        dir: Some(dir),
        child: None,
        port: super::free_port()?,
        bin_dir,
        settings: settings.to_vec(),
        user,
    };
    cluster.spawn()?;
    let options = match engine {
        Engine::Postgres => ServerOptions::Postgres(harness_options(
            PgConnectOptions::new_without_pgpass()
                .host("127.0.0.1")
                .port(cluster.port)
                .username("postgres")
                .database("postgres"),
        )),
        // mariadb-install-db makes root@127.0.0.1 without a password.
        Engine::Mariadb => ServerOptions::Mariadb(mariadb_harness_options(
            MySqlConnectOptions::new()
                .host("127.0.0.1")
                .port(cluster.port)
                .username("root"),
        )),
    };
    let ready = wait_until_ready(&options, timeout, &mut cluster).await;
    match ready {
        Ok(conn) => Ok((cluster, options, conn)),
        Err(e) => {
            let tail = cluster.log_tail();
            cluster.stop();
            bail!("{e:#}; server log: {tail}")
        }
    }
}

/// Makes the data directory `dir/data` (`initdb`, `mariadb-install-db`); returns the
/// directory of the server binary.
async fn initialise(engine: Engine, dir: &Path, user: Option<(Uid, Gid)>) -> Result<PathBuf> {
    let (bin_dir, mut cmd, program) = match engine {
        Engine::Postgres => {
            let bin_dir = find_binaries()?;
            let mut cmd = Command::new(bin_dir.join("initdb"));
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
            (bin_dir, cmd, "initdb")
        }
        Engine::Mariadb => {
            let (bin_dir, install) = find_mariadb_binaries()?;
            let mut cmd = Command::new(install);
            cmd.arg("--no-defaults")
                .arg(format!("--datadir={}", dir.join("data").display()))
                .args([
                    "--auth-root-authentication-method=normal",
                    "--skip-test-db",
                    "--skip-name-resolve",
                ]);
            (bin_dir, cmd, "mariadb-install-db")
        }
    };
    cmd.current_dir(dir).stdin(Stdio::null());
    as_user(&mut cmd, user);
    let init = tokio::process::Command::from(cmd)
        .output()
        .await
        .with_context(|| format!("running {program}"))?;
    if !init.status.success() {
        let output = [init.stderr, init.stdout].concat();
        bail!(
            "{program} failed: {}",
            super::last_lines(&String::from_utf8_lossy(&output), 3)
        );
    }
    Ok(bin_dir)
}
