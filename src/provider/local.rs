//! The `local` provider: a throwaway server made with this machine's binaries, in a
//! temporary directory, on a free port, run as an unprivileged user when the harness runs as
//! root (neither server runs as root). The directory is deleted when the server is stopped,
//! including on errors and Ctrl-C. The server is a child of the runner, so it can also be
//! stopped and started again (the `restart_server` fault).

use super::{Liveness, Owned, Place, Provider, Server, free_ports, last_lines, wait_until_ready};
use crate::backend::engine::ShutdownMode;
use crate::backend::seam::{Endpoint, LocalBinaries, LocalServer, Ports, Servers};
use crate::backend::{self, Driver};
use crate::scenario::{DatabasePlan, ProviderKind};
use crate::version::ServerVersion;
use anyhow::{Context, Result, anyhow, bail};
use async_trait::async_trait;
use nix::sys::signal::kill;
use nix::unistd::{Gid, Pid, Uid, User, chown};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(super) struct LocalProvider;

#[async_trait]
impl Provider for LocalProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Local
    }

    async fn available(&self, plan: &DatabasePlan) -> Result<(), String> {
        let servers = super::servers_of(backend::driver(plan.engine))?;
        binaries(servers.local(), plan.version.as_ref())
            .map(drop)
            .map_err(|e| format!("{e:#}"))
    }

    async fn provision(&self, plan: &DatabasePlan) -> Result<Server> {
        let (cluster, endpoint) = start(
            backend::driver(plan.engine),
            plan.version.as_ref(),
            &plan.settings,
            plan.startup_timeout,
        )
        .await?;
        let description = format!(
            "local server in {} (binaries {})",
            cluster.data_dir().display(),
            cluster.bins.bin_dir.display()
        );
        let place = Place {
            // The directory is in the description; the words stay the same run to run.
            storage: "the host's filesystem".into(),
            route: format!("127.0.0.1:{}", cluster.ports.main),
        };
        let owned = Owned::Local(std::sync::Mutex::new(cluster));
        Server::new(ProviderKind::Local, description, place, endpoint, owned).await
    }
}

/// A server process running from a temporary data directory.
pub struct LocalCluster {
    servers: &'static dyn Servers,
    dir: Option<tempfile::TempDir>,
    child: Option<Child>,
    pub ports: Ports,
    bins: LocalBinaries,
    settings: Vec<(String, String)>,
    user: Option<(Uid, Gid)>,
    /// Its entry among what the process started (see `leftovers`).
    remembered: u64,
}

impl LocalCluster {
    fn spec(&self) -> &'static dyn LocalServer {
        self.servers.local()
    }

    fn dir(&self) -> PathBuf {
        self.dir
            .as_ref()
            .map(|d| d.path().to_path_buf())
            .unwrap_or_default()
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir().join("data")
    }

    /// How to stop the server by hand (after `--keep`): as the account it runs as, which
    /// is not root's when the harness runs as root.
    pub fn stop_hint(&self) -> String {
        let stop = self.spec().stop_hint(&self.dir());
        let account = self
            .user
            .and_then(|(uid, _)| User::from_uid(uid).ok().flatten());
        let stop = match account {
            // Quoted as a whole for `su -c`: a hint with single quotes of its own in double.
            Some(u) if stop.contains('\'') => format!("su {} -c \"{stop}\"", u.name),
            Some(u) => format!("su {} -c '{stop}'", u.name),
            None => stop,
        };
        format!("data in {}; stop with `{stop}`", self.data_dir().display())
    }

    /// Starts the server on the existing data directory.
    fn spawn(&mut self) -> Result<()> {
        let dir = self
            .dir
            .as_ref()
            .context("the server's directory was removed")?
            .path()
            .to_path_buf();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("server.log"))
            .with_context(|| format!("opening {}", dir.join("server.log").display()))?;
        let mut cmd = self
            .spec()
            .serve(&self.bins, &dir, self.ports, &self.settings);
        // Its own process group: a Ctrl-C at the terminal must not shut the server down
        // under the runner, which still needs it to write results.
        cmd.current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0);
        as_user(&mut cmd, self.user);
        let program = self.spec().program();
        let child = cmd.spawn().with_context(|| format!("starting {program}"))?;
        crate::leftovers::set_pid(self.remembered, i32::try_from(child.id()).ok());
        self.child = Some(child);
        Ok(())
    }

    /// The server's main process, while it runs.
    pub fn process_id(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Whether the server is still running (an error says how it ended).
    pub fn check_alive(&mut self) -> Result<()> {
        let program = self.spec().program();
        match self.child.as_mut().map(|c| c.try_wait()) {
            Some(Ok(None)) => Ok(()),
            Some(Ok(Some(status))) => Err(anyhow!("{program} exited ({status})")),
            Some(Err(e)) => Err(anyhow!("cannot watch the {program} process: {e}")),
            None => Err(anyhow!("{program} is not running")),
        }
    }

    /// Shuts the server down with the engine's signal for `mode` and waits up to 10 s
    /// before SIGKILL. Blocks; the data directory stays.
    pub fn shut_down(&mut self, mode: ShutdownMode) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let signal = self.servers.shutdown_signal(mode);
        let _ = kill(Pid::from_raw(child.id() as i32), signal);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            // Reaped, or reaped already by a second Ctrl-C's teardown (an error here).
            if !matches!(child.try_wait(), Ok(None)) {
                crate::leftovers::set_pid(self.remembered, None);
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        crate::leftovers::set_pid(self.remembered, None);
    }

    /// Starts the server again after [`LocalCluster::shut_down`].
    pub fn start_again(&mut self) -> Result<()> {
        self.spawn()
    }

    /// A fast shutdown, then removes the directory.
    pub fn stop(&mut self) {
        self.shut_down(ShutdownMode::Fast);
        if let Some(dir) = self.dir.take() {
            let _ = dir.close();
        }
        crate::leftovers::forget(self.remembered);
    }

    /// The last lines of the server log, for error messages.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir().join("server.log")).unwrap_or_default();
        last_lines(&log, 3)
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
            .map_err(|_| anyhow!("the local server's lock is poisoned"))?
            .check_alive()
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The account the server runs as: ourselves, or when we are root the account Debian's
/// packages made for it, or else `nobody`.
fn server_user(own: &str) -> Result<Option<(Uid, Gid)>> {
    if !Uid::effective().is_root() {
        return Ok(None);
    }
    for name in [own, "nobody"] {
        if let Ok(Some(u)) = User::from_name(name) {
            return Ok(Some((u.uid, u.gid)));
        }
    }
    bail!(
        "running as root and neither a `{own}` nor a `nobody` account exists to run the server as"
    )
}

fn as_user(cmd: &mut Command, user: Option<(Uid, Gid)>) -> &mut Command {
    if let Some((uid, gid)) = user {
        cmd.uid(uid.as_raw()).gid(gid.as_raw());
    }
    cmd
}

/// The binaries of `version`, or, none asked for, the ones found.
fn binaries(spec: &dyn LocalServer, version: Option<&ServerVersion>) -> Result<LocalBinaries> {
    match version {
        Some(v) => spec.binaries_of(v),
        None => spec.binaries(),
    }
}

/// Makes and starts a server of `driver`'s engine (of `version`, when one is asked for) and
/// waits until it accepts connections.
pub async fn start(
    driver: &'static dyn Driver,
    version: Option<&ServerVersion>,
    settings: &[(String, String)],
    timeout: Duration,
) -> Result<(LocalCluster, Arc<dyn Endpoint>)> {
    let servers = super::servers_of(driver).map_err(|e| anyhow!(e))?;
    let spec = servers.local();
    let user = server_user(spec.account())?;
    let dir = tempfile::Builder::new()
        .prefix(&format!("dbq-bench-{}-", driver.facts().name))
        .tempdir()
        .context("creating a temporary directory")?;
    if let Some((uid, gid)) = user {
        chown(dir.path(), Some(uid), Some(gid))
            .context("handing the temporary directory to the server account")?;
    }
    let bins = binaries(spec, version)?;
    initialise(spec, &bins, dir.path(), user).await?;
    let ports = free_ports()?;
    let remembered = crate::leftovers::remember(crate::leftovers::Started::Local {
        pid: None,
        signal: servers.shutdown_signal(ShutdownMode::Fast),
        dir: dir.path().to_path_buf(),
        stop_hint: String::new(),
    });
    let mut cluster = LocalCluster {
        servers,
        dir: Some(dir),
        child: None,
        ports,
        bins,
        settings: settings.to_vec(),
        user,
        remembered,
    };
    crate::leftovers::set_stop_hint(remembered, cluster.stop_hint());
    cluster.spawn()?;
    let endpoint = spec.endpoint(cluster.ports);
    match wait_until_ready(&*endpoint, timeout, &mut cluster).await {
        Ok(()) => Ok((cluster, endpoint)),
        Err(e) => {
            let tail = cluster.log_tail();
            cluster.stop();
            bail!("{e:#}; server log: {tail}")
        }
    }
}

/// Makes the data directory `dir/data`.
async fn initialise(
    spec: &dyn LocalServer,
    bins: &LocalBinaries,
    dir: &Path,
    user: Option<(Uid, Gid)>,
) -> Result<()> {
    let mut cmd = spec.init(bins, dir);
    cmd.current_dir(dir).stdin(Stdio::null());
    as_user(&mut cmd, user);
    let program = bins.init.display().to_string();
    let init = tokio::process::Command::from(cmd)
        .output()
        .await
        .with_context(|| format!("running {program}"))?;
    if !init.status.success() {
        let output = String::from_utf8_lossy(&[init.stderr, init.stdout].concat()).into_owned();
        // The lines that say what went wrong, where the program marks them; else its last.
        let errors: Vec<&str> = output
            .lines()
            .filter(|l| l.contains("ERROR"))
            .take(3)
            .collect();
        let reason = match errors.is_empty() {
            true => last_lines(&output, 3),
            false => errors.join(" | "),
        };
        bail!("{program} failed: {reason}");
    }
    Ok(())
}
