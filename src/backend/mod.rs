//! Queue backends: everything the harness does to a queue goes through the seam in
//! [`seam`] (a [`Backend`] handing out [`Link`]s), so fleets, faults, the sampler and the
//! proof never name an engine, a table or a statement. Each engine is one module with its
//! statements and its provider parts; [`driver`] is the registry. [`memory`] is a backend
//! without a server, for unit tests of the logic above the seam and for the harness's own
//! ceiling.

pub mod broker;
pub mod design_files;
pub mod engine;
pub mod error;
pub mod figures;
pub mod job;
pub mod link;
pub mod queue;
#[macro_use]
pub mod registry;
pub mod seam;
pub mod sql;

pub use error::{BackendError, ErrorClass};
pub use figures::{ClaimProbe, DbSample, GroupView, RowVersions, TableStats};
pub use job::{
    ClaimedJob, FailOutcome, Handout, Insert, JobId, JobPayload, JobStatus, Loss, NewJob, Stranger,
    TableMismatch,
};
pub use seam::{
    Attachment, Backend, DesignError, DesignInfo, Driver, Endpoint, InstallError, Link, Mvcc,
    Ports, Readers, ServerFacts, SessionStates, Sessions, Vacuum, WakeUp,
};

pub use engine::{EngineFacts, ShutdownMode};
pub use queue::{
    BackoffPlan, CUSTOM_REQUIRED_FILES, ClaimMode, ExternalWorkers, Finish, Jitter, QueuePlan,
    VariantName, VariantPlan,
};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

// The registry: one line per engine folder (see `registry`).
registry! {
    /// PostgreSQL (the article's engine; every variant).
    #[default]
    Postgres => postgres,
    /// MariaDB ≥ 10.6 (MySQL's `SKIP LOCKED`; variants `seed`, `batch`, `delete`, `archive`,
    /// `visibility_timeout` and `custom`).
    Mariadb => mariadb,
    /// RabbitMQ ≥ 3.10, a broker: a quorum queue, publisher confirms, acknowledgements after
    /// the handler (variants `seed` and `batch` as the prefetch).
    Rabbitmq => rabbitmq,
    /// Redis ≥ 7 Streams, a broker: a consumer group claims, `XACK` completes (variants
    /// `seed` and `batch` as the job's life, not as SQL).
    Redis => redis_streams,
    /// Kafka (the API; Tansu, a Kafka-API broker, where the harness starts one), a log: a
    /// consumer group's members are the workers, offsets committed after the handler
    /// (variants `seed` and `batch` as records per poll).
    Kafka => kafka,
    /// No server: a queue in the harness's own memory (`--database-url memory://`), for the
    /// harness's ceiling and the logic above the seam.
    Memory => memory,
}

/// The engine's driver (the registry's line for it).
pub fn driver(engine: Engine) -> &'static dyn Driver {
    engine.driver()
}

/// A queue another process installed (worker processes reach the runner's queue this way).
pub fn attach(at: &Attachment, queue: &QueuePlan) -> Result<Arc<dyn Backend>, BackendError> {
    let engine = Engine::named(&at.engine)
        .ok_or_else(|| BackendError::unsupported(&format!("engine {}", at.engine), "this build"))?;
    driver(engine).attach(at, queue)
}

/// Installed queues this process has neither dropped nor handed over (`--keep`, a server
/// torn down with them): dropped by [`drop_open_namespaces`] after a panic, so that a bug
/// does not leave a run's tables on a server the user owns.
static OPEN: Mutex<Vec<Arc<dyn Backend>>> = Mutex::new(Vec::new());

fn open() -> MutexGuard<'static, Vec<Arc<dyn Backend>>> {
    OPEN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Installs `queue` in a fresh namespace on `endpoint`, remembered until [`release`]d.
pub async fn install(
    endpoint: &dyn Endpoint,
    prefix: &str,
    queue: &QueuePlan,
    audit: bool,
) -> Result<Arc<dyn Backend>, InstallError> {
    let backend = endpoint.install(prefix, queue, audit).await?;
    open().push(backend.clone());
    Ok(backend)
}

/// The queue is no longer this process's to clean up after a panic: it is kept for the
/// user, dropped, or goes with the server the run started.
pub fn release(backend: &dyn Backend) {
    open().retain(|b| b.namespace() != backend.namespace());
}

/// Drops every namespace still open, all at once, each given 5 s; returns one line per
/// namespace it could not drop. Runs only on the way out (a panic, a second Ctrl-C).
pub async fn drop_open_namespaces() -> Vec<String> {
    let open = std::mem::take(&mut *open());
    let drops = open.into_iter().map(|backend| async move {
        let dropped = tokio::time::timeout(Duration::from_secs(5), backend.drop_namespace()).await;
        match dropped {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(format!("the run's namespace {} ({e})", backend.namespace())),
            Err(_) => Some(format!(
                "the run's namespace {} (dropping it took over 5 s)",
                backend.namespace()
            )),
        }
    });
    futures_util::future::join_all(drops)
        .await
        .into_iter()
        .flatten()
        .collect()
}
