//! Redis Streams: a broker as a queue. A queue is a set of keys under a prefix of its own
//! (the namespace): the stream `<ns>:stream` with the consumer group `workers`, and beside it
//! what the proof and the retries need:
//!
//! - `<ns>:state`, a hash: each job's state and attempts (`done:1`), written by the same
//!   atomic script that moves the job (the seed's `status` column, on a broker);
//! - `<ns>:delayed`, a sorted set: failed entries waiting out their back-off;
//! - `<ns>:dead`, a stream: dead-lettered jobs, read back by id in the proof;
//! - `<ns>:keys` (payload key → id, for in-doubt enqueues), `<ns>:seq` (ids), and
//!   `<ns>:completions` (the completion audit).
//!
//! Every step is one Lua script (`scripts/`), so a job never stands half-moved. A claim is
//! `XREADGROUP` (the entry enters the group's pending list, committed at once: there is no
//! transaction to roll back, so a crashed worker's jobs wait for the reaper, `XAUTOCLAIM`);
//! a completion is `XACK` + `XDEL`. Each connection is named `dbq-bench/<ns>/<role>`
//! (`CLIENT SETNAME`), so `kill_backends` can find the run's clients (`CLIENT KILL`).

mod facts;
mod inspect;
mod link;
mod provider;

use super::error::{BackendError, ErrorClass};
use super::seam::{
    Attachment, Backend, ContainerImage, DesignInfo, Driver, Endpoint, InstallError, Link,
    LocalServer, ServerFacts, Servers, WakeUp,
};
use super::sql::namespace_name;
use crate::backend::engine::{EngineFacts, ShutdownMode};
use crate::backend::queue::{BackoffPlan, Finish, QueuePlan};
use async_trait::async_trait;
use link::RedisLink;
use redis::AsyncConnectionConfig;
use redis::aio::MultiplexedConnection;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicI64;
use std::time::Duration;

/// This engine takes no settings of its own (the registry's `EngineSettings`).
pub type Settings = crate::backend::engine::NoSettings;

pub struct RedisDriver;

pub static DRIVER: RedisDriver = RedisDriver;

/// The consumer group every worker of a run reads in.
const GROUP: &str = "workers";

impl From<redis::RedisError> for BackendError {
    fn from(e: redis::RedisError) -> BackendError {
        use redis::ErrorKind;
        let class = if e.is_io_error()
            || e.is_connection_dropped()
            || e.is_connection_refusal()
            || e.is_timeout()
            || e.is_unrecoverable_error()
        {
            ErrorClass::Connection
        } else if matches!(
            e.kind(),
            ErrorKind::AuthenticationFailed | ErrorKind::InvalidClientConfig
        ) || e.code() == Some("NOPERM")
            || e.code() == Some("WRONGPASS")
        {
            ErrorClass::Permanent
        } else {
            ErrorClass::Transient
        };
        BackendError {
            class,
            message: e.to_string().lines().next().unwrap_or("").to_string(),
            code: e.code().map(str::to_string),
        }
    }
}

impl From<redis::RedisError> for InstallError {
    fn from(e: redis::RedisError) -> InstallError {
        InstallError::Backend(e.into())
    }
}

/// The keys of one queue.
#[derive(Debug, Clone)]
pub struct Keys {
    pub stream: String,
    pub state: String,
    pub delayed: String,
    pub dead: String,
    pub seq: String,
    pub keys: String,
    pub audit: String,
    /// Present when the completion audit is on: the complete script counts completions.
    pub audit_on: String,
    pub bystander: String,
}

impl Keys {
    fn new(ns: &str) -> Keys {
        let k = |s: &str| format!("{ns}:{s}");
        Keys {
            stream: k("stream"),
            state: k("state"),
            delayed: k("delayed"),
            dead: k("dead"),
            seq: k("seq"),
            keys: k("keys"),
            audit: k("completions"),
            audit_on: k("audit"),
            bystander: k("bystander"),
        }
    }
}

/// The scripts, loaded once per process (`EVALSHA`, loaded again after a server restart).
pub struct Scripts {
    pub enqueue: redis::Script,
    pub claim: redis::Script,
    pub complete: redis::Script,
    pub fail: redis::Script,
    pub reap: redis::Script,
    pub counts: redis::Script,
}

impl Scripts {
    fn new() -> Scripts {
        Scripts {
            enqueue: redis::Script::new(include_str!("scripts/enqueue.lua")),
            claim: redis::Script::new(include_str!("scripts/claim.lua")),
            complete: redis::Script::new(include_str!("scripts/complete.lua")),
            fail: redis::Script::new(include_str!("scripts/fail.lua")),
            reap: redis::Script::new(include_str!("scripts/reap.lua")),
            counts: redis::Script::new(include_str!("scripts/counts.lua")),
        }
    }
}

/// What a queue's connections share.
pub struct Shared {
    pub namespace: String,
    pub keys: Keys,
    pub info: DesignInfo,
    pub scripts: Scripts,
    pub backoff: BackoffPlan,
    pub max_retries: i32,
    /// The highest job id this process has been given: no id is handed out twice, even by
    /// a server that lost its counter.
    pub highest_id: AtomicI64,
}

/// The design as the reports name it.
fn design_info(ns: &str, q: &QueuePlan) -> Result<DesignInfo, BackendError> {
    let batch = super::broker::claim_batch(q, "Redis")?;
    Ok(DesignInfo {
        label: format!("{} on Redis Streams", q.variant.name.as_str()),
        claim_batch: batch,
        finish: Finish::Delete,
        wake_up: WakeUp::Poll,
        table: format!("{ns}:stream"),
        claim_sql: format!(
            "XREADGROUP GROUP {GROUP} <worker> COUNT {batch} STREAMS {ns}:stream > \
             (src/backend/redis_streams/scripts/claim.lua)"
        ),
        files: None,
        ticks: None,
    })
}

/// How the harness connects: no response timeout (the client's default of 500 ms would
/// turn a slow fsync into a dropped connection; a real hang shows as a stalled run).
fn connection_config() -> AsyncConnectionConfig {
    AsyncConnectionConfig::new()
        .set_response_timeout(None)
        .set_connection_timeout(Some(Duration::from_secs(5)))
}

async fn connect(
    client: &redis::Client,
    name: &str,
) -> Result<MultiplexedConnection, BackendError> {
    let mut conn = client
        .get_multiplexed_async_connection_with_config(&connection_config())
        .await?;
    redis::cmd("CLIENT")
        .arg("SETNAME")
        .arg(name)
        .query_async::<()>(&mut conn)
        .await?;
    Ok(conn)
}

impl Driver for RedisDriver {
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
        let client = redis::Client::open(url).map_err(|e| e.to_string())?;
        Ok(Arc::new(RedisEndpoint { client }))
    }

    fn attach(&self, at: &Attachment, queue: &QueuePlan) -> Result<Arc<dyn Backend>, BackendError> {
        let client = redis::Client::open(at.url.as_str())?;
        Ok(Arc::new(RedisQueue::new(
            client,
            at.namespace.clone(),
            queue,
        )?))
    }
}

impl Servers for RedisDriver {
    fn shutdown_signal(&self, mode: ShutdownMode) -> nix::sys::signal::Signal {
        match mode {
            // Redis shuts down cleanly on SIGTERM (the AOF flushed and closed).
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

/// A Redis server.
pub struct RedisEndpoint {
    client: redis::Client,
}

impl RedisEndpoint {
    pub fn new(client: redis::Client) -> RedisEndpoint {
        RedisEndpoint { client }
    }
}

/// Settings that shape a benchmark's results, recorded with every run.
const KEY_SETTINGS: [&str; 5] = [
    "appendonly",
    "appendfsync",
    "save",
    "maxmemory",
    "io-threads",
];

#[async_trait]
impl Endpoint for RedisEndpoint {
    fn address(&self) -> String {
        let info = self.client.get_connection_info();
        let user = info.redis_settings().username().unwrap_or("");
        let at = if user.is_empty() { "" } else { "@" };
        format!(
            "redis://{user}{at}{}/{}",
            info.addr(),
            info.redis_settings().db()
        )
    }

    async fn ping(&self) -> Result<(), BackendError> {
        let mut conn = connect(&self.client, "dbq-bench").await?;
        redis::cmd("PING").query_async::<String>(&mut conn).await?;
        Ok(())
    }

    async fn describe(&self) -> Result<ServerFacts, BackendError> {
        let mut conn = connect(&self.client, "dbq-bench").await?;
        let info: String = redis::cmd("INFO")
            .arg("server")
            .query_async(&mut conn)
            .await?;
        let version = inspect::info_field(&info, "redis_version").unwrap_or_default();
        let mut settings = BTreeMap::new();
        for name in KEY_SETTINGS {
            // CONFIG may be renamed away on a managed server: then the settings go unrecorded.
            let got: Result<Vec<String>, _> = redis::cmd("CONFIG")
                .arg("GET")
                .arg(name)
                .query_async(&mut conn)
                .await;
            if let Ok([_, value]) = got.as_deref() {
                settings.insert(name.to_string(), value.clone());
            }
        }
        Ok(ServerFacts {
            version: format!("Redis {version}"),
            settings,
        })
    }

    async fn install(
        &self,
        prefix: &str,
        queue: &QueuePlan,
        audit: bool,
    ) -> Result<Arc<dyn Backend>, InstallError> {
        let name = namespace_name(prefix)?;
        let backend = RedisQueue::new(self.client.clone(), name, queue)?;
        let keys = &backend.shared.keys;
        let mut conn = connect(&self.client, "dbq-bench").await?;
        redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(&keys.stream)
            .arg(GROUP)
            .arg("0")
            .arg("MKSTREAM")
            .query_async::<()>(&mut conn)
            .await?;
        if audit {
            redis::cmd("SET")
                .arg(&keys.audit_on)
                .arg(1)
                .query_async::<()>(&mut conn)
                .await?;
        }
        Ok(Arc::new(backend))
    }
}

/// A queue under a key prefix of its own.
pub struct RedisQueue {
    client: redis::Client,
    shared: Arc<Shared>,
}

impl RedisQueue {
    fn new(
        client: redis::Client,
        namespace: String,
        q: &QueuePlan,
    ) -> Result<RedisQueue, BackendError> {
        let info = design_info(&namespace, q)?;
        Ok(RedisQueue {
            client,
            shared: Arc::new(Shared {
                keys: Keys::new(&namespace),
                namespace,
                info,
                scripts: Scripts::new(),
                backoff: q.backoff,
                max_retries: q.max_retries,
                highest_id: AtomicI64::new(0),
            }),
        })
    }
}

#[async_trait]
impl Backend for RedisQueue {
    fn namespace(&self) -> &str {
        &self.shared.namespace
    }

    fn design(&self) -> &DesignInfo {
        &self.shared.info
    }

    async fn connect(&self, role: &str) -> Result<Box<dyn Link>, BackendError> {
        let name = format!("dbq-bench/{}/{role}", self.shared.namespace);
        let conn = connect(&self.client, &name).await?;
        Ok(Box::new(RedisLink::new(
            conn,
            self.shared.clone(),
            role.to_string(),
        )))
    }

    /// The URL with its password (never shown).
    fn attachment(&self) -> Option<Attachment> {
        let info = self.client.get_connection_info();
        let s = info.redis_settings();
        let user = s.username().unwrap_or("");
        let auth = match s.password() {
            Some(pw) => format!("{user}:{pw}@"),
            None if !user.is_empty() => format!("{user}@"),
            None => String::new(),
        };
        Some(Attachment {
            engine: facts::FACTS.name.to_string(),
            url: format!("redis://{auth}{}/{}", info.addr(), s.db()),
            namespace: self.shared.namespace.clone(),
        })
    }

    /// Deletes every key under the prefix.
    async fn drop_namespace(&self) -> Result<(), BackendError> {
        let mut conn = connect(&self.client, "dbq-bench").await?;
        let pattern = format!("{}:*", self.shared.namespace);
        let mut cursor = 0u64;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .query_async(&mut conn)
                .await?;
            if !keys.is_empty() {
                redis::cmd("UNLINK")
                    .arg(&keys)
                    .query_async::<()>(&mut conn)
                    .await?;
            }
            if next == 0 {
                return Ok(());
            }
            cursor = next;
        }
    }
}
