//! The `local` provider: a throwaway cluster made with this machine's `initdb`, in a
//! temporary directory, on a free port, run as an unprivileged user when the harness runs
//! as root (the server refuses to run as root). The directory is deleted when the cluster
//! is stopped, including on errors and Ctrl-C. The postmaster is a child of the runner, so
//! it can also be stopped and started again (the `restart_server` fault).

use super::connect::{Liveness, harness_options, wait_until_ready};
use crate::scenario::ShutdownMode;
use anyhow::{Context, Result, anyhow, bail};
use nix::sys::signal::{Signal, kill};
use nix::unistd::{Gid, Pid, Uid, User, chown};
use sqlx::postgres::{PgConnectOptions, PgConnection};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A PostgreSQL server process running from a temporary data directory.
pub struct LocalCluster {
    dir: Option<tempfile::TempDir>,
    child: Option<Child>,
    pub port: u16,
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
        self.dir.as_ref().map(|d| d.path().join("postgres.log"))
    }

    /// Starts the postmaster on the existing data directory.
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
            .open(dir.join("postgres.log"))
            .context("opening the server log")?;
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
        // Its own process group: a Ctrl-C at the terminal must not shut the server down
        // under the runner, which still needs it to write results.
        cmd.current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0);
        as_user(&mut cmd, self.user);
        self.child = Some(cmd.spawn().context("starting postgres")?);
        Ok(())
    }

    /// Whether the postmaster is still running (an error says how it ended).
    pub fn check_alive(&mut self) -> Result<()> {
        match self.child.as_mut().map(|c| c.try_wait()) {
            Some(Ok(None)) => Ok(()),
            Some(Ok(Some(status))) => Err(anyhow!("postgres exited ({status})")),
            Some(Err(e)) => Err(anyhow!("cannot watch the postgres process: {e}")),
            None => Err(anyhow!("postgres is not running")),
        }
    }

    /// Shuts the postmaster down (`Fast`: SIGINT, `Immediate`: SIGQUIT) and waits up to 10 s
    /// before SIGKILL. Blocks; the data directory stays.
    pub fn shut_down(&mut self, mode: ShutdownMode) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let signal = match mode {
            ShutdownMode::Fast => Signal::SIGINT,
            ShutdownMode::Immediate => Signal::SIGQUIT,
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

/// The account the server runs as: ourselves, or when we are root the `postgres` account
/// (made by Debian's packages) or else `nobody`.
fn server_user() -> Result<Option<(Uid, Gid)>> {
    if !Uid::effective().is_root() {
        return Ok(None);
    }
    for name in ["postgres", "nobody"] {
        if let Ok(Some(u)) = User::from_name(name) {
            return Ok(Some((u.uid, u.gid)));
        }
    }
    bail!(
        "running as root and neither a `postgres` nor a `nobody` account exists to run the server as"
    )
}

fn as_user(cmd: &mut Command, user: Option<(Uid, Gid)>) -> &mut Command {
    if let Some((uid, gid)) = user {
        cmd.uid(uid.as_raw()).gid(gid.as_raw());
    }
    cmd
}

/// Makes and starts a cluster, and waits until it accepts connections.
pub async fn start(
    settings: &[(String, String)],
    timeout: Duration,
) -> Result<(LocalCluster, PgConnectOptions, PgConnection)> {
    let bin_dir = find_binaries()?;
    let user = server_user()?;
    let dir = tempfile::Builder::new()
        .prefix("dbq-bench-pg-")
        .tempdir()
        .context("creating a temporary directory")?;
    if let Some((uid, gid)) = user {
        chown(dir.path(), Some(uid), Some(gid))
            .context("handing the temporary directory to the server account")?;
    }
    let init = {
        let mut cmd = Command::new(bin_dir.join("initdb"));
        cmd.arg("-D")
            .arg(dir.path().join("data"))
            .args([
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .current_dir(dir.path())
            .stdin(Stdio::null());
        as_user(&mut cmd, user);
        tokio::process::Command::from(cmd)
            .output()
            .await
            .context("running initdb")?
    };
    if !init.status.success() {
        bail!(
            "initdb failed: {}",
            super::last_lines(&String::from_utf8_lossy(&init.stderr), 3)
        );
    }
    let mut cluster = LocalCluster {
        dir: Some(dir),
        child: None,
        port: super::free_port()?,
        bin_dir,
        settings: settings.to_vec(),
        user,
    };
    cluster.spawn()?;
    let options = harness_options(
        PgConnectOptions::new_without_pgpass()
            .host("127.0.0.1")
            .port(cluster.port)
            .username("postgres")
            .database("postgres"),
    );
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
