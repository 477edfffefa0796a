//! The queue both SQL engines install, written once: a design in a namespace of its own on
//! a server, and the run's connections to it. What differs between PostgreSQL and MariaDB
//! (how a namespace is made and entered, how a session is named, what a link does, how the
//! namespace goes away) is each engine's [`Dialect`], in its own folder.

use super::Shared;
use super::design::SqlDesign;
use super::namespace_name;
use super::rehearsal;
use super::server::{self, AuditTables};
use crate::backend::engine::EngineFacts;
use crate::backend::error::BackendError;
use crate::backend::queue::QueuePlan;
use crate::backend::seam::{
    Attachment, Backend, DesignError, DesignInfo, Endpoint, InstallError, Link, ServerFacts,
};
use async_trait::async_trait;
use sqlx::{
    AssertSqlSafe, ColumnIndex, Connection, Database, Decode, Executor, IntoArguments, Type,
};
use std::future::Future;
use std::sync::Arc;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// A connection of engine `D`'s sqlx driver.
pub type Conn<D> = <<D as Dialect>::Db as Database>::Connection;

/// The connection options of engine `D`'s sqlx driver.
pub type Options<D> = <Conn<D> as Connection>::Options;

/// What one SQL engine says where the two differ: its facts, its designs, its namespace and
/// its connections. Everything else about installing and reaching a queue is
/// [`SqlQueue`]'s.
pub trait Dialect: Send + Sync + Sized + 'static {
    /// sqlx's driver for the engine.
    type Db: Database;

    /// The engine's facts (its name in an attachment).
    const FACTS: &'static EngineFacts;

    /// The harness's completion audit and status trigger, in the engine's dialect.
    const AUDIT_TABLES: &'static AuditTables;

    /// The design a plan names, in the engine's statements.
    const DESIGN: fn(&QueuePlan) -> Result<SqlDesign, DesignError>;

    /// What the server's `version()` is prefixed with, where it does not name the server.
    const VERSION_LABEL: &'static str;

    /// `(name, value)` rows of the settings that shape a benchmark's results.
    const KEY_SETTINGS: &'static str;

    /// `options` as every harness connection has them (no statement logging: a load
    /// generator's statements are its measurement, and sqlx's timing of each is CPU taken
    /// from the server it loads).
    fn harness(options: Options<Self>) -> Options<Self>;

    /// The server's address, without its password.
    fn address(options: &Options<Self>) -> String;

    /// The statement that makes namespace `name` (a validated name, safe to splice).
    fn create_namespace(name: &str) -> String;

    /// `options` with namespace `name` as the place every statement runs.
    fn into_namespace(options: &Options<Self>, name: &str) -> Options<Self>;

    /// Opens a connection of the run, its session known by `name`
    /// (`dbq-bench/<namespace>/<role>`).
    fn open(
        options: &Options<Self>,
        name: String,
    ) -> impl Future<Output = Result<Conn<Self>, BackendError>> + Send;

    /// A connection as the engine's link.
    fn link(conn: Conn<Self>, shared: Arc<Shared>) -> Box<dyn Link>;

    /// Checks a custom design's statements against its installed tables.
    fn check<'a>(
        conn: &'a mut Conn<Self>,
        d: &'a SqlDesign,
    ) -> impl Future<Output = Result<(), DesignError>> + Send + 'a;

    /// The URL another process attaches to the queue with (no secret dropped).
    fn url(options: &Options<Self>) -> String;

    /// The environment a library's workers reach the queue with, in the engine's
    /// client's variables.
    fn client_env(options: &Options<Self>, namespace: &str) -> Vec<(String, String)>;

    /// Drops the run's namespace.
    fn drop_namespace(
        queue: &SqlQueue<Self>,
    ) -> impl Future<Output = Result<(), BackendError>> + Send;

    /// The first of `settings` the server takes only for itself, not a session, and how to
    /// set it instead; by default none (a session setting is refused by the plan).
    fn refused_session_setting(
        _options: &Options<Self>,
        _settings: &[(String, String)],
    ) -> impl Future<Output = Result<Option<(String, String)>, BackendError>> + Send {
        async { Ok(None) }
    }

    /// A wake-up for each job enqueued, where the design sends one.
    fn wake_ups(_queue: &SqlQueue<Self>, _stop: &CancellationToken) -> Option<Arc<Notify>> {
        None
    }
}

/// A queue installed in a namespace of its own (a schema, a database).
pub struct SqlQueue<D: Dialect> {
    pub shared: Arc<Shared>,
    /// Connection options into the namespace.
    pub options: Options<D>,
}

impl<D: Dialect> SqlQueue<D> {
    /// The queue of design `d` in `namespace`, reached with `options`; nothing is
    /// installed.
    pub fn new(options: Options<D>, namespace: String, d: SqlDesign, q: &QueuePlan) -> Self {
        SqlQueue {
            shared: Shared::new(namespace, d, q),
            options,
        }
    }
}

impl<D: Dialect> SqlQueue<D>
where
    SqlQueue<D>: Backend,
{
    /// The queue another process installed in namespace `at.namespace`, reached with
    /// `options` whatever namespace the URL names (`prove` is given the server's own URL).
    pub fn attach(
        options: &Options<D>,
        at: &Attachment,
        queue: &QueuePlan,
    ) -> Result<Arc<dyn Backend>, BackendError> {
        let design = (D::DESIGN)(queue).map_err(|e| {
            BackendError::new(crate::backend::error::ErrorClass::Permanent, e.to_string())
        })?;
        let options = D::into_namespace(options, &at.namespace);
        let q = SqlQueue::<D>::new(options, at.namespace.clone(), design, queue);
        Ok(Arc::new(q))
    }
}

impl<D: Dialect> SqlQueue<D>
where
    for<'c> &'c mut Conn<D>: Executor<'c, Database = D::Db>,
{
    /// Installs the design `queue` names in a new namespace on the server `options` reach:
    /// the namespace is dropped again when the design does not install.
    pub async fn install_new(
        options: &Options<D>,
        prefix: &str,
        queue: &QueuePlan,
        audit: bool,
    ) -> Result<Arc<dyn Backend>, InstallError> {
        let design = (D::DESIGN)(queue)?;
        let name = namespace_name(prefix)?;
        let mut conn = Conn::<D>::connect_with(options).await?;
        conn.execute(AssertSqlSafe(D::create_namespace(&name)))
            .await?;
        conn.close().await.ok();
        let backend = SqlQueue::<D>::new(D::into_namespace(options, &name), name, design, queue);
        if let Err(e) = backend.install(audit).await {
            backend.drop_namespace().await.ok();
            return Err(e);
        }
        Ok(Arc::new(backend))
    }

    /// The name of the run's session of `role`: `dbq-bench/<namespace>/<role>`.
    pub fn session_name(&self, role: &str) -> String {
        format!("dbq-bench/{}/{role}", self.shared.namespace)
    }

    /// A connection of the run for `role`.
    pub async fn open(&self, role: &str) -> Result<Conn<D>, BackendError> {
        D::open(&self.options, self.session_name(role)).await
    }

    /// Creates the design's tables (and the completion audit when asked); a custom design's
    /// schema and statements are checked here, before any load, and their failures blamed
    /// on its files.
    async fn install(&self, audit: bool) -> Result<(), InstallError> {
        let mut conn = self.open("main").await?;
        let d = &self.shared.design;
        let audit = audit.then_some(D::AUDIT_TABLES);
        let result = server::install::<D::Db, _>(&mut conn, d, audit, D::check).await;
        conn.close().await.ok();
        result?;
        rehearsal::rehearse_custom(self, d).await
    }
}

#[async_trait]
impl<D: Dialect> Backend for SqlQueue<D>
where
    for<'c> &'c mut Conn<D>: Executor<'c, Database = D::Db>,
{
    fn namespace(&self) -> &str {
        &self.shared.namespace
    }

    fn design(&self) -> &DesignInfo {
        &self.shared.info
    }

    async fn connect(&self, role: &str) -> Result<Box<dyn Link>, BackendError> {
        let conn = self.open(role).await?;
        Ok(D::link(conn, self.shared.clone()))
    }

    fn wake_ups(&self, stop: &CancellationToken) -> Option<Arc<Notify>> {
        D::wake_ups(self, stop)
    }

    fn attachment(&self) -> Option<Attachment> {
        Some(Attachment {
            engine: D::FACTS.name.to_string(),
            url: D::url(&self.options),
            namespace: self.shared.namespace.clone(),
        })
    }

    fn client_env(&self) -> Vec<(String, String)> {
        D::client_env(&self.options, &self.shared.namespace)
    }

    async fn drop_namespace(&self) -> Result<(), BackendError> {
        D::drop_namespace(self).await
    }
}

/// A server of engine `D`, reached with `options`.
pub struct SqlEndpoint<D: Dialect> {
    options: Options<D>,
}

impl<D: Dialect> SqlEndpoint<D> {
    pub fn new(options: Options<D>) -> Self {
        SqlEndpoint {
            options: D::harness(options),
        }
    }
}

#[async_trait]
impl<D: Dialect> Endpoint for SqlEndpoint<D>
where
    for<'c> &'c mut Conn<D>: Executor<'c, Database = D::Db>,
    <D::Db as Database>::Arguments: IntoArguments<D::Db>,
    for<'r> String: Decode<'r, D::Db> + Type<D::Db>,
    usize: ColumnIndex<<D::Db as Database>::Row>,
{
    fn address(&self) -> String {
        D::address(&self.options)
    }

    async fn ping(&self) -> Result<(), BackendError> {
        server::ping::<Conn<D>>(&self.options).await
    }

    async fn describe(&self) -> Result<ServerFacts, BackendError> {
        let mut conn = D::open(&self.options, "dbq-bench".into()).await?;
        let facts = server::describe::<D::Db>(&mut conn, D::VERSION_LABEL, D::KEY_SETTINGS).await;
        conn.close().await.ok();
        facts
    }

    async fn refused_session_setting(
        &self,
        settings: &[(String, String)],
    ) -> Result<Option<(String, String)>, BackendError> {
        D::refused_session_setting(&self.options, settings).await
    }

    async fn install(
        &self,
        prefix: &str,
        queue: &QueuePlan,
        audit: bool,
    ) -> Result<Arc<dyn Backend>, InstallError> {
        SqlQueue::<D>::install_new(&self.options, prefix, queue, audit).await
    }
}
