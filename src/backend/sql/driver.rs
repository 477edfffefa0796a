//! A SQL engine's driver and its servers, written once over its [`Dialect`]: a server by
//! URL, a queue attached again, the signals that stop its servers, and the official image's
//! recipe as data ([`ImageRecipe`]): its port, its password's variable, and the program its
//! settings follow.

use super::queue::{Dialect, Options, SqlEndpoint, SqlQueue};
use crate::backend::engine::{EngineFacts, ShutdownMode};
use crate::backend::error::BackendError;
use crate::backend::queue::QueuePlan;
use crate::backend::seam::{
    Attachment, Backend, ContainerImage, Driver, Endpoint, LocalServer, Ports, Servers,
};
use nix::sys::signal::Signal;
use std::marker::PhantomData;
use std::sync::Arc;

/// How a SQL engine's official image runs its server.
pub struct ImageRecipe {
    /// The server's port inside the container.
    pub port: u16,
    /// The variable that sets the superuser's password.
    pub password_variable: &'static str,
    /// What the container runs before the settings (empty: the image's own entry point
    /// takes the settings as its arguments).
    pub program: &'static [&'static str],
    /// The signals that stop a server fast (open transactions rolled back, a clean
    /// shutdown) and at once (crash recovery on the next start).
    pub fast: Signal,
    pub immediate: Signal,
}

/// The servers and connections of the SQL engine `D`.
pub struct SqlDriver<D>(PhantomData<D>);

impl<D> SqlDriver<D> {
    pub const fn new() -> SqlDriver<D> {
        SqlDriver(PhantomData)
    }
}

impl<D> Default for SqlDriver<D> {
    fn default() -> Self {
        Self::new()
    }
}

/// The official image of the SQL engine `D`, run as its recipe says.
pub struct SqlContainer<D>(PhantomData<D>);

impl<D> SqlContainer<D> {
    pub const fn new() -> SqlContainer<D> {
        SqlContainer(PhantomData)
    }
}

impl<D> Default for SqlContainer<D> {
    fn default() -> Self {
        Self::new()
    }
}

/// The local server and the container of a SQL engine (its folder's `provider.rs`).
pub trait SqlServers: Dialect {
    /// The official image's recipe.
    const IMAGE: ImageRecipe;
    /// How the local provider makes and runs a throwaway server.
    const LOCAL: &'static dyn LocalServer;
    /// How the container provider runs the image.
    const CONTAINER: &'static dyn ContainerImage;
    /// A server setting as the server program's arguments (`-c k=v`, `--k=v`).
    fn setting_args(key: &str, value: &str) -> Vec<String>;
    /// The superuser's options on `host` (this machine's loopback, or a container's own
    /// address) at `port`.
    fn superuser(host: &str, port: u16, password: Option<&str>) -> Options<Self>;
    /// A server's URL read (an engine's own scheme accepted).
    fn parse(url: &str) -> sqlx::Result<Options<Self>>;
    /// `options` with `settings` applied to each session; by default none are (the plan
    /// refuses session settings on an engine that has none).
    fn with_session_settings(
        options: Options<Self>,
        _settings: &[(String, String)],
    ) -> Options<Self> {
        options
    }
}

/// A server's settings as the server program's arguments.
pub fn server_args<D: SqlServers>(settings: &[(String, String)]) -> Vec<String> {
    let args = settings.iter().flat_map(|(k, v)| D::setting_args(k, v));
    args.collect()
}

/// The run's endpoint on a server of `D` at `host`:`port`.
pub fn superuser_endpoint<D: SqlServers>(
    host: &str,
    port: u16,
    password: Option<&str>,
) -> Arc<dyn Endpoint>
where
    SqlEndpoint<D>: Endpoint,
{
    Arc::new(SqlEndpoint::<D>::new(D::superuser(host, port, password)))
}

impl<D: SqlServers> Driver for SqlDriver<D>
where
    SqlEndpoint<D>: Endpoint,
    SqlQueue<D>: Backend,
{
    fn facts(&self) -> &'static EngineFacts {
        D::FACTS
    }

    fn servers(&self) -> Option<&dyn Servers> {
        Some(self)
    }

    fn endpoint(
        &self,
        url: &str,
        settings: &[(String, String)],
    ) -> Result<Arc<dyn Endpoint>, String> {
        let options = D::parse(url).map_err(|e| e.to_string())?;
        let options = D::with_session_settings(D::harness(options), settings);
        Ok(Arc::new(SqlEndpoint::<D>::new(options)))
    }

    fn attach(&self, at: &Attachment, queue: &QueuePlan) -> Result<Arc<dyn Backend>, BackendError> {
        SqlQueue::<D>::attach(&D::harness(D::parse(&at.url)?), at, queue)
    }
}

impl<D: SqlServers> Servers for SqlDriver<D> {
    fn shutdown_signal(&self, mode: ShutdownMode) -> Signal {
        match mode {
            ShutdownMode::Fast => D::IMAGE.fast,
            ShutdownMode::Immediate => D::IMAGE.immediate,
        }
    }

    fn local(&self) -> &dyn LocalServer {
        D::LOCAL
    }

    fn container(&self) -> &dyn ContainerImage {
        D::CONTAINER
    }
}

impl<D: SqlServers> ContainerImage for SqlContainer<D>
where
    SqlEndpoint<D>: Endpoint,
{
    fn port(&self) -> u16 {
        D::IMAGE.port
    }

    fn password_variable(&self) -> &'static str {
        D::IMAGE.password_variable
    }

    /// The recipe's program, then the settings as its arguments: the official images pass
    /// their arguments to the server.
    fn command(
        &self,
        settings: &[(String, String)],
        _password: &str,
        _ports: Ports,
    ) -> Vec<String> {
        let program = D::IMAGE.program.iter().map(|p| p.to_string());
        program.chain(server_args::<D>(settings)).collect()
    }

    fn endpoint(&self, host: &str, ports: Ports, password: &str) -> Arc<dyn Endpoint> {
        superuser_endpoint::<D>(host, ports.main, Some(password))
    }
}
