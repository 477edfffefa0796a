//! RabbitMQ: the broker the article names. A queue is a set of queues named after the
//! namespace: `<ns>.jobs` (a durable quorum queue by default; classic, or transient, as
//! `queue.rabbitmq_queue` says), `<ns>.dead` (dead letters, of the same kind) and
//! `<ns>.retry.<n>` (queues of the same kind whose messages wait out the n-th back-off, then
//! are dead-lettered back to the jobs; at least once where they are quorum queues).
//!
//! A job is enqueued when its publisher confirm arrives. A worker consumes with a prefetch
//! of the claim batch and acknowledges after the handler; a worker that vanishes leaves its
//! messages unacknowledged and the broker delivers them again by itself (the `in_transaction`
//! claim mode: nothing for a reaper to do). A failure publishes the job to its retry queue
//! (or, at `max_retries`, to the dead letters), waits for the confirm, then acknowledges the
//! delivery. The broker keeps nothing of an acknowledged message, so the proof reads what is
//! left (nothing may wait or be unacknowledged at the end, dead letters are read back by id)
//! and the completions come from the harness's ledger.

mod admin;
mod facts;
mod inspect;
mod link;
mod provider;
pub mod settings;

pub use settings::{RabbitQueue, Settings};

use super::error::{BackendError, ErrorClass};
use super::seam::{
    Attachment, Backend, ContainerImage, DesignInfo, Driver, Endpoint, InstallError, Link,
    LocalServer, ServerFacts, Servers, WakeUp,
};
use super::sql::namespace_name;
use crate::backend::engine::{EngineFacts, ShutdownMode};
use crate::backend::queue::{BackoffPlan, Finish, QueuePlan};
use admin::Admin;
use async_trait::async_trait;
use lapin::options::{QueueDeclareOptions, QueueDeleteOptions};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{Connection, ConnectionProperties};
use link::RabbitLink;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicI64;

pub struct RabbitDriver;

pub static DRIVER: RabbitDriver = RabbitDriver;

/// Retry queues: one per attempt up to this many, later attempts share the last (their
/// back-off is capped or long by then).
const RETRY_LEVELS: i32 = 20;

impl From<lapin::Error> for BackendError {
    fn from(e: lapin::Error) -> BackendError {
        use lapin::ErrorKind;
        let class = match e.kind() {
            ErrorKind::IOError(_)
            | ErrorKind::RuntimeShutdownError(_)
            | ErrorKind::InvalidConnectionState(_)
            | ErrorKind::InvalidChannelState(..)
            | ErrorKind::InvalidChannel(_)
            | ErrorKind::MissingHeartbeatError
            | ErrorKind::ParsingError(_) => ErrorClass::Connection,
            ErrorKind::ProtocolError(p) if e.is_amqp_hard_error() => {
                let _ = p;
                ErrorClass::Connection
            }
            ErrorKind::AuthProviderError(_) | ErrorKind::InvalidProtocolVersion(_) => {
                ErrorClass::Permanent
            }
            // A soft protocol error closes the channel: the link must be replaced.
            ErrorKind::ProtocolError(_) => ErrorClass::Connection,
            _ => ErrorClass::Transient,
        };
        let message = e.to_string();
        let class = if message.contains("ACCESS_REFUSED") || message.contains("NOT_ALLOWED") {
            ErrorClass::Permanent
        } else {
            class
        };
        BackendError::new(class, message.lines().next().unwrap_or("").to_string())
    }
}

impl From<lapin::Error> for InstallError {
    fn from(e: lapin::Error) -> InstallError {
        InstallError::Backend(e.into())
    }
}

/// What a queue's connections share.
pub struct Shared {
    pub namespace: String,
    pub info: DesignInfo,
    pub kind: RabbitQueue,
    pub backoff: BackoffPlan,
    pub max_retries: i32,
    /// Redeliveries count as failed attempts (`reaper.count_as_attempt`, quorum queues).
    pub redeliveries_count: bool,
    /// Ids are the harness's: the broker has no counter. Only the runner enqueues.
    pub next_id: AtomicI64,
    /// The management API, for the sampler and `kill_backends` (the runner's queue only:
    /// worker processes have no use for it).
    pub admin: Option<Admin>,
}

impl Shared {
    pub fn jobs(&self) -> String {
        format!("{}.jobs", self.namespace)
    }

    pub fn dead(&self) -> String {
        format!("{}.dead", self.namespace)
    }

    /// The retry queue of a job's `attempt`-th failure (1-based).
    pub fn retry(&self, attempt: i32) -> String {
        format!(
            "{}.retry.{}",
            self.namespace,
            attempt.clamp(1, RETRY_LEVELS)
        )
    }

    /// Every queue of the namespace: jobs, dead letters, retries.
    pub fn all_queues(&self) -> Vec<String> {
        let mut all = vec![self.jobs(), self.dead()];
        all.extend((1..=self.retry_levels()).map(|n| self.retry(n)));
        all
    }

    /// Declares every queue of the namespace (again: a declaration of what exists is a
    /// no-op), as clients do when they connect, so a broker that lost its queues in a
    /// restart gets them back empty.
    pub async fn declare(&self, channel: &lapin::Channel) -> lapin::Result<()> {
        for queue in [self.jobs(), self.dead()] {
            let (options, args) = self.main_queue();
            channel.queue_declare(queue.into(), options, args).await?;
        }
        for n in 1..=self.retry_levels() {
            let (options, args) = self.retry_queue();
            channel
                .queue_declare(self.retry(n).into(), options, args)
                .await?;
        }
        Ok(())
    }

    fn retry_levels(&self) -> i32 {
        (self.max_retries - 1).clamp(0, RETRY_LEVELS)
    }

    /// Whether messages are written to disk (persistent) and queues survive a restart.
    pub fn durable(&self) -> bool {
        self.kind != RabbitQueue::Transient
    }

    /// The jobs' and dead letters' queue: its declaration's options and arguments.
    fn main_queue(&self) -> (QueueDeclareOptions, FieldTable) {
        let mut args = FieldTable::default();
        if self.kind == RabbitQueue::Quorum {
            args.insert(
                "x-queue-type".into(),
                AMQPValue::LongString("quorum".into()),
            );
        }
        let options = QueueDeclareOptions {
            durable: self.durable(),
            ..QueueDeclareOptions::default()
        };
        (options, args)
    }

    /// A retry queue, dead-lettering expired messages back to the jobs' queue. Beside a
    /// quorum queue it is a quorum queue too, dead-lettering at least once (RabbitMQ 3.10+):
    /// a classic retry queue dead-letters at most once, and jobs waiting in one when the
    /// server crashed were lost (4 to 8 in each of three runs of 40 s of faults, each last
    /// failed within 1.6 s before the crash).
    fn retry_queue(&self) -> (QueueDeclareOptions, FieldTable) {
        let mut args = FieldTable::default();
        if self.kind == RabbitQueue::Quorum {
            for (k, v) in [
                ("x-queue-type", "quorum"),
                ("x-dead-letter-strategy", "at-least-once"),
                // At-least-once dead-lettering needs it: the queue refuses a publish when full
                // rather than dropping its head.
                ("x-overflow", "reject-publish"),
            ] {
                args.insert(k.into(), AMQPValue::LongString(v.into()));
            }
        }
        args.insert(
            "x-dead-letter-exchange".into(),
            AMQPValue::LongString("".into()),
        );
        args.insert(
            "x-dead-letter-routing-key".into(),
            AMQPValue::LongString(self.jobs().into()),
        );
        let options = QueueDeclareOptions {
            durable: self.durable(),
            ..QueueDeclareOptions::default()
        };
        (options, args)
    }
}

fn design_info(ns: &str, q: &QueuePlan) -> Result<DesignInfo, BackendError> {
    let batch = super::broker::claim_batch(q, "RabbitMQ")?;
    let kind = Settings::of(q).rabbitmq_queue.as_str();
    Ok(DesignInfo {
        label: format!("{} on RabbitMQ ({kind} queue)", q.variant.name.as_str()),
        claim_batch: batch,
        finish: Finish::Delete,
        wake_up: WakeUp::Poll,
        table: format!("{ns}.jobs"),
        claim_sql: format!(
            "basic.consume {ns}.jobs with basic.qos prefetch {batch}; basic.ack after the handler"
        ),
        files: None,
        ticks: None,
    })
}

/// How long a goodbye may take: a connection or channel the broker already dropped (in a
/// restart) may never answer its close, and the run must not wait on it.
const GOODBYE: std::time::Duration = std::time::Duration::from_secs(2);

/// The longest any broker operation may take before the link counts as broken: the client
/// can wait forever on a connection the broker dropped while restarting.
const ANSWER_WITHIN: std::time::Duration = std::time::Duration::from_secs(30);

/// `op`, or a connection error when the broker has not answered within [`ANSWER_WITHIN`].
pub(super) async fn within<T>(
    op: impl std::future::Future<Output = lapin::Result<T>>,
) -> lapin::Result<T> {
    match tokio::time::timeout(ANSWER_WITHIN, op).await {
        Ok(r) => r,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "the broker did not answer within 30 s",
        )
        .into()),
    }
}

/// Closes `conn`, giving up after [`GOODBYE`].
pub(super) async fn hang_up(conn: &Connection) {
    let _ = tokio::time::timeout(GOODBYE, conn.close(200, "OK".into())).await;
}

/// Closes `channel`, giving up after [`GOODBYE`]; whether it closed.
pub(super) async fn close_channel(channel: &lapin::Channel) -> bool {
    matches!(
        tokio::time::timeout(GOODBYE, channel.close(200, "OK".into())).await,
        Ok(Ok(()))
    )
}

/// A named connection (the name shows in the broker's connection list).
async fn connect(url: &str, name: &str) -> Result<Connection, BackendError> {
    let props = ConnectionProperties::default().with_connection_name(name.into());
    Ok(within(Connection::connect(url, props)).await?)
}

impl Driver for RabbitDriver {
    fn facts(&self) -> &'static EngineFacts {
        &facts::FACTS
    }

    fn servers(&self) -> Option<&dyn Servers> {
        Some(self)
    }

    fn endpoint(
        &self,
        url: &str,
        _settings: &[(String, String)],
    ) -> Result<Arc<dyn Endpoint>, String> {
        (facts::FACTS.parse_url)(url)?;
        let admin_port = admin::management_port(url)?;
        Ok(Arc::new(RabbitEndpoint::new(url.to_string(), admin_port)))
    }

    fn attach(&self, at: &Attachment, queue: &QueuePlan) -> Result<Arc<dyn Backend>, BackendError> {
        Ok(Arc::new(RabbitQueueBackend::new(
            at.url.clone(),
            at.namespace.clone(),
            queue,
            None,
        )?))
    }
}

impl Servers for RabbitDriver {
    fn shutdown_signal(&self, mode: ShutdownMode) -> nix::sys::signal::Signal {
        match mode {
            // RabbitMQ stops gracefully on SIGTERM.
            ShutdownMode::Fast => nix::sys::signal::Signal::SIGTERM,
            ShutdownMode::Immediate => nix::sys::signal::Signal::SIGKILL,
        }
    }

    fn local(&self) -> &dyn LocalServer {
        &provider::LOCAL
    }

    fn container(&self) -> &dyn ContainerImage {
        &provider::CONTAINER
    }
}

/// A RabbitMQ broker.
pub struct RabbitEndpoint {
    /// `amqp://user:password@host:port/vhost`: never shown.
    url: String,
    /// Its management API on the URL's host and `admin_port`.
    admin: Option<Admin>,
}

impl RabbitEndpoint {
    pub fn new(url: String, admin_port: u16) -> RabbitEndpoint {
        let admin = Admin::at(&url, admin_port);
        RabbitEndpoint { url, admin }
    }
}

#[async_trait]
impl Endpoint for RabbitEndpoint {
    fn address(&self) -> String {
        crate::redact::redact_url(&self.url)
    }

    async fn ping(&self) -> Result<(), BackendError> {
        let conn = connect(&self.url, "dbq-bench").await?;
        hang_up(&conn).await;
        Ok(())
    }

    /// The version comes from the management API (the AMQP client does not expose the
    /// broker's properties); without the API it is only "RabbitMQ".
    async fn describe(&self) -> Result<ServerFacts, BackendError> {
        self.ping().await?;
        let version = match &self.admin {
            Some(admin) => admin.version().await.ok(),
            None => None,
        };
        Ok(ServerFacts {
            version: version.unwrap_or_else(|| "RabbitMQ".into()),
            settings: BTreeMap::new(),
        })
    }

    async fn install(
        &self,
        prefix: &str,
        queue: &QueuePlan,
        _audit: bool,
    ) -> Result<Arc<dyn Backend>, InstallError> {
        let name = namespace_name(prefix)?;
        let backend = RabbitQueueBackend::new(self.url.clone(), name, queue, self.admin.clone())?;
        let conn = connect(&self.url, "dbq-bench").await?;
        let channel = conn.create_channel().await?;
        within(backend.shared.declare(&channel)).await?;
        hang_up(&conn).await;
        Ok(Arc::new(backend))
    }
}

/// A queue (with its dead letters and retries) named after the namespace.
pub struct RabbitQueueBackend {
    url: String,
    shared: Arc<Shared>,
}

impl RabbitQueueBackend {
    fn new(
        url: String,
        namespace: String,
        q: &QueuePlan,
        admin: Option<Admin>,
    ) -> Result<Self, BackendError> {
        let info = design_info(&namespace, q)?;
        Ok(RabbitQueueBackend {
            url,
            shared: Arc::new(Shared {
                namespace,
                info,
                kind: Settings::of(q).rabbitmq_queue,
                backoff: q.backoff,
                max_retries: q.max_retries,
                redeliveries_count: q.redeliveries_count,
                next_id: AtomicI64::new(0),
                admin,
            }),
        })
    }
}

#[async_trait]
impl Backend for RabbitQueueBackend {
    fn namespace(&self) -> &str {
        &self.shared.namespace
    }

    fn design(&self) -> &DesignInfo {
        &self.shared.info
    }

    async fn connect(&self, role: &str) -> Result<Box<dyn Link>, BackendError> {
        let name = format!("dbq-bench/{}/{role}", self.shared.namespace);
        let conn = connect(&self.url, &name).await?;
        Ok(Box::new(
            RabbitLink::open(conn, self.shared.clone(), role).await?,
        ))
    }

    fn attachment(&self) -> Option<Attachment> {
        Some(Attachment {
            engine: facts::FACTS.name.to_string(),
            url: self.url.clone(),
            namespace: self.shared.namespace.clone(),
        })
    }

    async fn drop_namespace(&self) -> Result<(), BackendError> {
        let conn = connect(&self.url, "dbq-bench").await?;
        let channel = conn.create_channel().await?;
        for queue in self.shared.all_queues() {
            channel
                .queue_delete(queue.into(), QueueDeleteOptions::default())
                .await?;
        }
        hang_up(&conn).await;
        Ok(())
    }
}
