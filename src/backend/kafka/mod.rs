//! Kafka: the seed's other broker, which is a log, not a job queue. A queue is three topics
//! named after the namespace: `<ns>.jobs` (`queue.partitions` partitions), `<ns>.retry` (as
//! many: failed jobs waiting out their back-off) and `<ns>.dead` (one: dead letters), and the
//! consumer group `<ns>.workers`, whose members are the workers.
//!
//! A job is enqueued when the broker acknowledges its record (`acks=all`, an idempotent
//! producer). A worker is a group member subscribed to the jobs and the retries: a claim takes
//! the records one poll hands it (up to the claim batch), the handler runs, and the worker
//! commits the records' offsets after it (at least once: the `in_transaction` claim mode, the
//! offset being the claim). A failure produces the job to the retries (or, at `max_retries`,
//! to the dead letters), waits for the broker's acknowledgement, then commits. A retry whose
//! back-off has not ended holds its worker until it has (a Kafka retry topic's head-of-line
//! wait). A worker that vanishes leaves its offsets uncommitted: once the group notices
//! (`session.timeout.ms`), its partitions move to another member, which reads them again from
//! the last committed offset. A commit refused because the partition moved meanwhile is a
//! stale outcome: the job runs again elsewhere.
//!
//! The proof reads what the topics hold and the group's committed offsets: a job's latest
//! record (the dead letters over the retries over the jobs) below its partition's committed
//! offset ended (`done`, or `dead_letter` in the dead letters), at or above it is waiting, and
//! a job with no record left is gone (done as the ledger says, or lost: records deleted before
//! anyone consumed them).

mod facts;
mod inspect;
mod link;
mod provenance;
mod provider;
mod reader;
mod record;
pub mod settings;
pub mod url;

pub use settings::Settings;

use super::error::{BackendError, ErrorClass};
use super::seam::{
    Attachment, Backend, ContainerImage, DesignInfo, Driver, Endpoint, InstallError, Link,
    LocalServer, ServerFacts, Servers, WakeUp,
};
use super::sql::namespace_name;
use crate::backend::engine::{EngineFacts, ShutdownMode};
use crate::backend::queue::{BackoffPlan, Finish, QueuePlan};
use async_trait::async_trait;
use link::KafkaLink;
use rdkafka::ClientConfig;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicI64;
use std::time::Duration;

/// Why `reaper.count_as_attempt` is refused on Kafka.
pub const NO_DELIVERY_COUNT: &str = "Kafka keeps no count of a record's deliveries, so a job \
    that crashes its worker every time would be read again forever: use count_as_attempt = false";

pub struct KafkaDriver;

pub static DRIVER: KafkaDriver = KafkaDriver;

/// How long one request to the broker may take before the link counts as broken.
const ANSWER_WITHIN: Duration = Duration::from_secs(30);

/// How long a ping waits for the cluster's metadata: a provider asks again until its own
/// deadline, and a metadata request cannot be cancelled once it runs on its thread.
const PING_WITHIN: Duration = Duration::from_secs(1);

impl From<KafkaError> for BackendError {
    fn from(e: KafkaError) -> BackendError {
        use RDKafkaErrorCode as C;
        let class = match e.rdkafka_error_code() {
            Some(
                C::BrokerTransportFailure
                | C::AllBrokersDown
                | C::NetworkException
                | C::RequestTimedOut
                | C::OperationTimedOut
                | C::Resolve,
            ) => ErrorClass::Connection,
            // A fatal error (an idempotent producer whose id the broker no longer knows:
            // it lost its state) ends the client: only a new one can go on, as after a
            // broken connection.
            Some(C::Fatal | C::UnknownProducerId | C::InvalidProducerEpoch) => {
                ErrorClass::Connection
            }
            Some(
                C::SaslAuthenticationFailed
                | C::Authentication
                | C::TopicAuthorizationFailed
                | C::GroupAuthorizationFailed
                | C::ClusterAuthorizationFailed,
            ) => ErrorClass::Permanent,
            // The run made its topics before the load: one the broker no longer knows was
            // deleted, or lost with the broker's log. Waiting cannot bring its records back.
            Some(C::UnknownTopicOrPartition | C::UnknownTopic | C::UnknownTopicId) => {
                return BackendError::new(
                    ErrorClass::Permanent,
                    format!(
                        "{e}: the broker no longer has one of the run's topics (deleted, or lost with its log in a restart)"
                    ),
                );
            }
            _ => ErrorClass::Transient,
        };
        BackendError::new(class, e.to_string())
    }
}

impl From<KafkaError> for InstallError {
    fn from(e: KafkaError) -> InstallError {
        InstallError::Backend(e.into())
    }
}

/// The topics and group of one queue.
#[derive(Debug, Clone)]
pub struct Topics {
    pub jobs: String,
    pub retry: String,
    pub dead: String,
    pub group: String,
}

impl Topics {
    pub(super) fn of_stage(&self, stage: u8) -> &str {
        match stage {
            0 => &self.jobs,
            1 => &self.retry,
            _ => &self.dead,
        }
    }

    fn new(ns: &str) -> Topics {
        Topics {
            jobs: format!("{ns}.jobs"),
            retry: format!("{ns}.retry"),
            dead: format!("{ns}.dead"),
            group: format!("{ns}.workers"),
        }
    }
}

/// What a queue's connections share.
pub struct Shared {
    pub namespace: String,
    /// The client settings of the URL (`bootstrap.servers` first; a password among them).
    pub settings: Vec<(String, String)>,
    pub topics: Topics,
    pub info: DesignInfo,
    pub backoff: BackoffPlan,
    pub max_retries: i32,
    pub partitions: i32,
    /// Ids are the harness's: only the runner enqueues (workers produce retries of ids it
    /// gave out).
    pub next_id: AtomicI64,
    /// This process installed the queue (the runner): it gives out the ids and notes where
    /// each job's record went; a queue attached to (a worker process, `prove DIR`) does not.
    pub installed: bool,
    pub delivered: provenance::Delivered,
}

impl Shared {
    /// A client configuration: the URL's settings, then `extra`. No client creates a topic
    /// by asking for it (librdkafka's producers do by default): a topic the broker lost
    /// would come back empty under a new id, hiding the loss, and librdkafka 2.12's
    /// metadata cache can crash on a topic whose id changed (its issue #4964).
    pub fn config(&self, extra: &[(&str, &str)]) -> ClientConfig {
        let mut c = ClientConfig::new();
        c.set("allow.auto.create.topics", "false");
        for (k, v) in &self.settings {
            c.set(k, v);
        }
        for (k, v) in extra {
            c.set(*k, *v);
        }
        c
    }
}

fn design_info(ns: &str, q: &QueuePlan) -> Result<DesignInfo, BackendError> {
    let batch = super::broker::claim_batch(q, "Kafka")?;
    let partitions = Settings::of(q).partitions;
    Ok(DesignInfo {
        label: format!(
            "{} on the Kafka API ({partitions} partitions)",
            q.variant.name.as_str()
        ),
        claim_batch: batch,
        finish: Finish::Delete,
        wake_up: WakeUp::Poll,
        table: format!("{ns}.jobs"),
        claim_sql: format!(
            "poll {ns}.jobs and {ns}.retry in group {ns}.workers (up to {batch} records); \
             commit their offsets after the handler"
        ),
        files: None,
        ticks: None,
    })
}

/// An admin client of the URL's settings.
fn admin(settings: &[(String, String)]) -> Result<AdminClient<DefaultClientContext>, BackendError> {
    let mut c = ClientConfig::new();
    for (k, v) in settings {
        c.set(k, v);
    }
    Ok(c.create()?)
}

impl Driver for KafkaDriver {
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
        let settings = url::client_settings(url)?;
        Ok(Arc::new(KafkaEndpoint::new(settings, None)))
    }

    fn attach(&self, at: &Attachment, queue: &QueuePlan) -> Result<Arc<dyn Backend>, BackendError> {
        let settings = url::client_settings(&at.url)
            .map_err(|e| BackendError::new(ErrorClass::Permanent, e))?;
        Ok(Arc::new(KafkaQueue::new(
            settings,
            at.namespace.clone(),
            queue,
            false,
        )?))
    }
}

impl Servers for KafkaDriver {
    fn shutdown_signal(&self, mode: ShutdownMode) -> nix::sys::signal::Signal {
        match mode {
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

/// A Kafka-API broker (or cluster).
pub struct KafkaEndpoint {
    settings: Vec<(String, String)>,
    /// The broker's software and version where the harness started it (the protocol does
    /// not say which software answers).
    software: Option<String>,
}

impl KafkaEndpoint {
    pub fn new(settings: Vec<(String, String)>, software: Option<String>) -> KafkaEndpoint {
        KafkaEndpoint { settings, software }
    }

    /// The brokers the cluster's metadata names, asked for `within`.
    async fn brokers(&self, within: Duration) -> Result<usize, BackendError> {
        let admin = admin(&self.settings)?;
        let metadata =
            tokio::task::spawn_blocking(move || admin.inner().fetch_metadata(None, within))
                .await
                .map_err(|e| BackendError::new(ErrorClass::Connection, e.to_string()))??;
        Ok(metadata.brokers().len())
    }
}

#[async_trait]
impl Endpoint for KafkaEndpoint {
    fn address(&self) -> String {
        url::redacted(&self.settings)
    }

    async fn ping(&self) -> Result<(), BackendError> {
        self.brokers(PING_WITHIN).await.map(drop)
    }

    async fn describe(&self) -> Result<ServerFacts, BackendError> {
        let brokers = self.brokers(ANSWER_WITHIN).await?;
        let version = self.software.clone().unwrap_or_else(|| {
            "a Kafka-API broker (its software is not reported over the protocol)".into()
        });
        let settings = BTreeMap::from([("brokers".to_string(), brokers.to_string())]);
        Ok(ServerFacts { version, settings })
    }

    async fn install(
        &self,
        prefix: &str,
        queue: &QueuePlan,
        _audit: bool,
    ) -> Result<Arc<dyn Backend>, InstallError> {
        let name = namespace_name(prefix)?;
        let backend = KafkaQueue::new(self.settings.clone(), name, queue, true)?;
        let t = &backend.shared.topics;
        let p = backend.shared.partitions;
        let topics = [
            NewTopic::new(&t.jobs, p, TopicReplication::Fixed(1)),
            NewTopic::new(&t.retry, p, TopicReplication::Fixed(1)),
            NewTopic::new(&t.dead, 1, TopicReplication::Fixed(1)),
        ];
        let options = AdminOptions::new().operation_timeout(Some(ANSWER_WITHIN));
        for made in admin(&self.settings)?
            .create_topics(&topics, &options)
            .await?
        {
            made.map_err(|(topic, code)| {
                BackendError::new(
                    ErrorClass::Permanent,
                    format!("creating topic {topic}: {code}"),
                )
            })?;
        }
        reader::Reader::new(&backend.shared, "install")?
            .register_group(&[&t.jobs, &t.retry], p)
            .await?;
        Ok(Arc::new(backend))
    }
}

/// A queue: its topics and group.
pub struct KafkaQueue {
    shared: Arc<Shared>,
}

impl KafkaQueue {
    fn new(
        settings: Vec<(String, String)>,
        namespace: String,
        q: &QueuePlan,
        installed: bool,
    ) -> Result<KafkaQueue, BackendError> {
        let info = design_info(&namespace, q)?;
        Ok(KafkaQueue {
            shared: Arc::new(Shared {
                topics: Topics::new(&namespace),
                namespace,
                settings,
                info,
                backoff: q.backoff,
                max_retries: q.max_retries,
                partitions: Settings::of(q).partitions as i32,
                next_id: AtomicI64::new(0),
                installed,
                delivered: provenance::Delivered::default(),
            }),
        })
    }
}

#[async_trait]
impl Backend for KafkaQueue {
    fn namespace(&self) -> &str {
        &self.shared.namespace
    }

    fn design(&self) -> &DesignInfo {
        &self.shared.info
    }

    async fn connect(&self, role: &str) -> Result<Box<dyn Link>, BackendError> {
        Ok(Box::new(KafkaLink::open(self.shared.clone(), role).await?))
    }

    /// The URL with its password (never shown).
    fn attachment(&self) -> Option<Attachment> {
        Some(Attachment {
            engine: facts::FACTS.name.to_string(),
            url: url::to_url(&self.shared.settings),
            namespace: self.shared.namespace.clone(),
        })
    }

    async fn drop_namespace(&self) -> Result<(), BackendError> {
        let t = &self.shared.topics;
        let options = AdminOptions::new().operation_timeout(Some(ANSWER_WITHIN));
        let admin = admin(&self.shared.settings)?;
        admin
            .delete_topics(&[&t.jobs, &t.retry, &t.dead], &options)
            .await?;
        let groups = admin.delete_groups(&[&t.group], &options).await;
        // A group that never had a member does not exist: nothing to delete.
        drop(groups);
        Ok(())
    }
}
