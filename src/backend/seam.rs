//! The seam between the harness and a queue backend. Everything above it (fleets, faults,
//! the sampler, the proof, the stages of a run) holds these traits and nothing of an
//! engine; each engine is one folder below it, listed by one line of [`super::registry`]
//! (`postgres`, `mariadb`, `rabbitmq`, `redis_streams`, `kafka`; `memory` for unit tests and
//! the harness's own ceiling).
//!
//! - [`Driver`]: an engine: how to reach its servers and how providers make one.
//! - [`Endpoint`]: one server, reachable; installs queues in namespaces of their own.
//! - [`Backend`]: one installed queue (a design in a namespace); hands out connections.
//! - [`Link`]: one [`Connection`] to it, with what each role does on it: [`Enqueue`] (producers),
//!   [`Work`] (workers and the reaper) and [`Inspect`] (set-up, the sampler, the proof), and
//!   the capabilities only some engines offer, each an `Option`: [`Bystand`], [`Planner`],
//!   [`Outbox`], [`Group`], [`Provenance`], [`Sessions`], [`SessionStates`], [`Mvcc`],
//!   [`Vacuum`], [`Readers`], [`Audit`]; in [`super::link`], re-exported here.

pub use super::link::{
    Audit, Bystand, Connection, Enqueue, Group, Inspect, Link, Mvcc, Outbox, Planner, Provenance,
    Readers, SessionStates, Sessions, Vacuum, Work,
};

use super::engine::{EngineFacts, ShutdownMode};
use super::error::BackendError;
use crate::backend::queue::{Finish, QueuePlan};
use crate::version::ServerVersion;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// An engine: one per engine, in the registry (`backend::driver`).
pub trait Driver: Sync {
    /// What the engine runs and how its figures are named (its folder's `facts.rs`).
    fn facts(&self) -> &'static EngineFacts;
    /// A server given by URL (the url provider), `settings` applied to each session where
    /// the engine can (the plan refuses them where it cannot).
    fn endpoint(
        &self,
        url: &str,
        settings: &[(String, String)],
    ) -> Result<Arc<dyn Endpoint>, String>;
    /// A queue installed by another process, reached again (worker processes): the queue
    /// whose [`Backend::attachment`] gave `at`.
    fn attach(&self, at: &Attachment, queue: &QueuePlan) -> Result<Arc<dyn Backend>, BackendError>;
    /// The servers the harness can start itself (the local and container providers); `None`
    /// for an engine it cannot start, which then takes a server by URL only.
    fn servers(&self) -> Option<&dyn Servers> {
        None
    }
}

/// How the harness starts and stops servers of one engine.
pub trait Servers: Sync {
    /// The signal that stops a server of this engine in `mode`.
    fn shutdown_signal(&self, mode: ShutdownMode) -> nix::sys::signal::Signal;
    /// How the local provider makes and runs a throwaway server of this engine.
    fn local(&self) -> &dyn LocalServer;
    /// How the container provider runs one.
    fn container(&self) -> &dyn ContainerImage;
}

/// Where a local server's binaries are.
#[derive(Debug, Clone)]
pub struct LocalBinaries {
    /// The directory of the server program.
    pub bin_dir: PathBuf,
    /// The program that makes a data directory.
    pub init: PathBuf,
}

impl LocalBinaries {
    /// Where a local provider looks for an engine's programs, in order: `variable`'s
    /// directory when it is set (and then only it), else `defaults`, then PATH.
    pub fn search_dirs(variable: &str, defaults: &[&str]) -> Vec<PathBuf> {
        if let Some(dir) = std::env::var_os(variable).filter(|d| !d.is_empty()) {
            return vec![PathBuf::from(dir)];
        }
        let path = std::env::var_os("PATH");
        let mut dirs: Vec<PathBuf> = defaults
            .iter()
            .map(PathBuf::from)
            .chain(path.iter().flat_map(std::env::split_paths))
            .collect();
        dirs.dedup();
        dirs
    }
}

/// The host's ports a server is reached on: its protocol's, and an administrative HTTP API's
/// for an engine that has one (RabbitMQ's management API; the others ignore it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ports {
    pub main: u16,
    pub admin: u16,
}

/// How the local provider makes and runs a server of one engine.
pub trait LocalServer: Sync {
    /// The server program's name, for messages (`postgres`, `mariadbd`).
    fn program(&self) -> &'static str;
    /// The account Debian's packages made for the server, which it runs as when the harness
    /// runs as root (neither server runs as root).
    fn account(&self) -> &'static str;
    /// Finds the binaries; the error says how to install them.
    fn binaries(&self) -> anyhow::Result<LocalBinaries>;
    /// Finds the binaries of one version (`database.version`), where the engine installs
    /// several side by side; by default the ones `binaries` finds, whose version the server
    /// states once it runs (and the run refuses another).
    fn binaries_of(&self, version: &ServerVersion) -> anyhow::Result<LocalBinaries> {
        let _ = version;
        self.binaries()
    }
    /// The command that makes the data directory `dir/data`.
    fn init(&self, bins: &LocalBinaries, dir: &Path) -> Command;
    /// The command that serves `dir/data` on 127.0.0.1:`ports.main` (and its HTTP API, if it
    /// has one, on `ports.admin`).
    fn serve(
        &self,
        bins: &LocalBinaries,
        dir: &Path,
        ports: Ports,
        settings: &[(String, String)],
    ) -> Command;
    /// How to reach the server once it runs.
    fn endpoint(&self, ports: Ports) -> Arc<dyn Endpoint>;
    /// How to stop it by hand, when `--keep` leaves it running.
    fn stop_hint(&self, dir: &Path) -> String;
}

/// How the container provider runs a server of one engine from an image that behaves like
/// the engine's official one.
pub trait ContainerImage: Sync {
    /// The server's port inside the container.
    fn port(&self) -> u16;
    /// Its administrative HTTP API's port inside the container, for an engine that has one.
    fn admin_port(&self) -> Option<u16> {
        None
    }
    /// Variables the container needs besides the password.
    fn environment(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
    /// The variable that sets the administrator's password.
    fn password_variable(&self) -> &'static str;
    /// The container's command, with the server settings as its arguments (and the
    /// password, for a server that takes it as an argument rather than from the variable;
    /// the host's `ports`, for a server that tells clients where to connect).
    fn command(&self, settings: &[(String, String)], password: &str, ports: Ports) -> Vec<String>;
    /// How to reach the server on `host`:`ports.main` (its API on `ports.admin`) with
    /// `password`: the container's own address and ports, or 127.0.0.1 and the ports
    /// published on the host.
    fn endpoint(&self, host: &str, ports: Ports, password: &str) -> Arc<dyn Endpoint>;
    /// Whether clients may reach the server on the container's own address. An engine whose
    /// server tells clients where to connect (a Kafka broker's advertised listener names the
    /// published port) says no.
    fn reachable_directly(&self) -> bool {
        true
    }
}

/// What a server says about itself.
#[derive(Debug, Clone, Default)]
pub struct ServerFacts {
    /// `SELECT version()`, named by engine.
    pub version: String,
    /// The settings that shape a benchmark's results, as the server reports them.
    pub settings: BTreeMap<String, String>,
}

/// A design could not be installed: which file (or key) and why (bad input, exit 2).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{file}: {reason}")]
pub struct DesignError {
    pub file: String,
    pub reason: String,
}

/// Why installing a queue failed.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The design itself is at fault (a custom design's files).
    #[error(transparent)]
    Design(#[from] DesignError),
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// One server, reachable.
#[async_trait]
pub trait Endpoint: Send + Sync {
    /// `scheme://user@host:port/database`, never the password.
    fn address(&self) -> String;
    /// Connects once and hangs up: whether the server accepts connections now. A permanent
    /// error (a refused login, an unknown database) will not change by waiting.
    async fn ping(&self) -> Result<(), BackendError>;
    async fn describe(&self) -> Result<ServerFacts, BackendError>;
    /// On a server the run does not own, the first of `settings` that a session cannot set
    /// (the server's own setting, or no setting at all): its name and why, with how to set it
    /// on the server instead. Engines that take no session settings have them refused by the
    /// plan, so by default nothing is refused here.
    async fn refused_session_setting(
        &self,
        _settings: &[(String, String)],
    ) -> Result<Option<(String, String)>, BackendError> {
        Ok(None)
    }
    /// A fresh namespace (`<prefix>_<time>_<random>`) with `queue`'s design installed, and
    /// the completion audit when `audit`.
    async fn install(
        &self,
        prefix: &str,
        queue: &QueuePlan,
        audit: bool,
    ) -> Result<Arc<dyn Backend>, InstallError>;
}

/// How another process reaches an installed queue (a URL with its password: never shown).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Attachment {
    /// The engine's name (its facts' `name`).
    pub engine: String,
    pub url: String,
    pub namespace: String,
}

/// How an idle worker waits after an empty claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WakeUp {
    /// Sleep `consumers.poll_interval` (the seed).
    Poll,
    /// Wait for a notification from an enqueue, or `poll_interval`, whichever comes first.
    Notify,
}

/// What the harness knows of an installed design.
#[derive(Debug, Clone)]
pub struct DesignInfo {
    /// `seed`, `batch`, …, or `custom:<dir>`.
    pub label: String,
    /// Jobs one claim takes at most.
    pub claim_batch: u32,
    pub finish: Finish,
    pub wake_up: WakeUp,
    /// The hot table: what statistics, cleanup and readers look at.
    pub table: String,
    /// The claim statement (or the backend's own words for it), for reports.
    pub claim_sql: String,
    /// A custom design's files: its name, and the SHA-256 of each file and of them all.
    pub files: Option<super::design_files::DesignFiles>,
    /// The design has a ticker ([`Work::tick`]) the harness runs this often.
    pub ticks: Option<std::time::Duration>,
}

/// One installed queue.
#[async_trait]
pub trait Backend: Send + Sync {
    /// Where the queue lives on its server (a schema; a database on MariaDB).
    fn namespace(&self) -> &str;
    fn design(&self) -> &DesignInfo;
    /// A connection in `role` (`worker-3`, `sampler`, …), named on the server so that a
    /// run's own sessions can be told apart and targeted by faults.
    async fn connect(&self, role: &str) -> Result<Box<dyn Link>, BackendError>;
    /// Wake-ups for idle workers, for designs that announce jobs (one per announcement),
    /// until `stop`; `None` (the default) when workers only poll.
    fn wake_ups(&self, _stop: &CancellationToken) -> Option<Arc<Notify>> {
        None
    }
    /// How a worker process reaches this queue (`None`, the default: only from this process).
    fn attachment(&self) -> Option<Attachment> {
        None
    }
    /// Environment that points the engine's own command-line clients (pgbench) at the
    /// namespace; none by default.
    fn client_env(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    /// Drops the namespace and everything in it.
    async fn drop_namespace(&self) -> Result<(), BackendError>;
}
