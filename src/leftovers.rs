//! What this process started and has not removed yet: local servers (their process and
//! directory), containers (with their volumes and network), and a library's worker processes (each its own process group). The orderly teardown removes them as their handles drop; a
//! second Ctrl-C does not wait for that, so it calls [`remove_all`], which removes them
//! within a few seconds, or names each one it could not remove with the command that does.

use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// One thing the run started.
#[derive(Debug, Clone)]
pub enum Started {
    /// A local server: its main process while it runs (the leader of its own process
    /// group), the signal that shuts it down fast, its temporary directory, and how to stop
    /// it by hand.
    Local {
        pid: Option<i32>,
        signal: Signal,
        dir: PathBuf,
        stop_hint: String,
    },
    Container {
        id: String,
    },
    /// A process group of its own (a library's worker), killed outright.
    Group {
        pgid: i32,
        what: String,
    },
}

static STARTED: Mutex<Vec<(u64, Started)>> = Mutex::new(Vec::new());
static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn started() -> MutexGuard<'static, Vec<(u64, Started)>> {
    STARTED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Remembers `what` until [`forget`] is called with the token returned.
pub fn remember(what: Started) -> u64 {
    let token = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    started().push((token, what));
    token
}

/// A local server's main process changed (it was started again, or stopped: `None`).
pub fn set_pid(token: u64, new: Option<i32>) {
    for (t, what) in started().iter_mut() {
        if let (true, Started::Local { pid, .. }) = (*t == token, what) {
            *pid = new;
        }
    }
}

/// How to stop a local server by hand, once its ports are known.
pub fn set_stop_hint(token: u64, hint: String) {
    for (t, what) in started().iter_mut() {
        if let (true, Started::Local { stop_hint, .. }) = (*t == token, what) {
            *stop_hint = hint.clone();
        }
    }
}

/// It was removed in order.
pub fn forget(token: u64) {
    started().retain(|(t, _)| *t != token);
}

/// Forgets its entry when dropped: held by a handle whose removal is its own drop.
#[derive(Debug)]
pub struct Remembered(pub u64);

impl Drop for Remembered {
    fn drop(&mut self) {
        forget(self.0);
    }
}

/// Removes everything still remembered, each local server given `grace` to shut down before
/// its process group is killed; returns one line per thing that could not be removed, with
/// the command that removes it.
pub async fn remove_all(grace: Duration) -> Vec<String> {
    let all = std::mem::take(&mut *started());
    let mut left = Vec::new();
    for (_, what) in all {
        let outcome = match what {
            Started::Local {
                pid,
                signal,
                dir,
                stop_hint,
            } => tokio::task::spawn_blocking(move || {
                stop_local(pid, signal, &dir, grace, &stop_hint)
            })
            .await
            .unwrap_or_else(|e| Err(format!("a local server: {e}"))),
            Started::Container { id } => remove_container(&id).await,
            Started::Group { pgid, what } => match killpg(Pid::from_raw(pgid), Signal::SIGKILL) {
                Ok(()) | Err(nix::errno::Errno::ESRCH) => Ok(()),
                Err(e) => Err(format!(
                    "{what} (process group {pgid}: {e}; kill -9 -{pgid})"
                )),
            },
        };
        left.extend(outcome.err());
    }
    left
}

/// Whether the process started a server (local or container): then a run's namespaces
/// live on it and go with it.
pub fn started_a_server() -> bool {
    started()
        .iter()
        .any(|(_, s)| !matches!(s, Started::Group { .. }))
}

/// What is still remembered, one line each with the command that removes it (for a third
/// Ctrl-C, which does not wait at all).
pub fn describe() -> Vec<String> {
    started()
        .iter()
        .map(|(_, what)| match what {
            Started::Local { dir, stop_hint, .. } => format!(
                "a local server in {} (stop it: {stop_hint}; then rm -rf {})",
                dir.display(),
                dir.display()
            ),
            Started::Container { id } => format!("container {id} (docker rm -f {id})"),
            Started::Group { pgid, what } => format!("{what} (kill -9 -{pgid})"),
        })
        .collect()
}

fn stop_local(
    pid: Option<i32>,
    signal: Signal,
    dir: &std::path::Path,
    grace: Duration,
    stop_hint: &str,
) -> Result<(), String> {
    if let Some(pid) = pid.map(Pid::from_raw) {
        let _ = kill(pid, signal);
        let deadline = Instant::now() + grace;
        while !gone(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        if !gone(pid) {
            // Its own process group: the server and every backend it forked.
            let _ = killpg(pid, Signal::SIGKILL);
            std::thread::sleep(Duration::from_millis(100));
            if !gone(pid) {
                return Err(format!(
                    "a local server (process {pid}) in {} (stop it: {stop_hint})",
                    dir.display()
                ));
            }
        }
    }
    std::fs::remove_dir_all(dir).map_err(|e| {
        format!(
            "the local server's directory {} ({e}; rm -rf {})",
            dir.display(),
            dir.display()
        )
    })
}

/// The process has exited: reaped here, or already reaped by its handle.
fn gone(pid: Pid) -> bool {
    match waitpid(pid, Some(WaitPidFlag::WNOHANG)) {
        Ok(WaitStatus::StillAlive) => false,
        Ok(_) => true,
        // Not our child any more (reaped by the orderly teardown): ask whether it runs.
        Err(_) => kill(pid, None).is_err(),
    }
}

/// Removes the container, its anonymous volumes (the data its image declares a VOLUME) and
/// the network of its own the provider gave it.
async fn remove_container(id: &str) -> Result<(), String> {
    let removed = async {
        let docker = testcontainers::bollard::Docker::connect_with_defaults().ok()?;
        let networks = own_networks(&docker, id).await;
        let options =
            testcontainers::bollard::query_parameters::RemoveContainerOptionsBuilder::new()
                .force(true)
                .v(true)
                .build();
        docker.remove_container(id, Some(options)).await.ok()?;
        for network in networks {
            docker.remove_network(&network).await.ok();
        }
        Some(())
    };
    match removed.await {
        Some(()) => Ok(()),
        None => Err(format!("container {id} (docker rm -f -v {id})")),
    }
}

/// The networks named `dbq-bench-…` the container is on: the provider's own for it.
async fn own_networks(docker: &testcontainers::bollard::Docker, id: &str) -> Vec<String> {
    let Ok(c) = docker.inspect_container(id, None).await else {
        return Vec::new();
    };
    let networks = c.network_settings.and_then(|n| n.networks);
    let names = networks.into_iter().flat_map(|n| n.into_keys());
    names.filter(|n| n.starts_with("dbq-bench-")).collect()
}
