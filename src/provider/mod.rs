//! Providers: how a run obtains a server, and how it gives it back. Each provider is one
//! [`Provider`]; `auto` takes the first that can work here. What differs between engines
//! (commands, images, signals, how to connect) comes from the engine's driver
//! (`backend::driver`), so the providers themselves name no engine.

pub mod container;
pub mod local;

use crate::backend::engine::ShutdownMode;
use crate::backend::error::{BackendError, ErrorClass};
use crate::backend::seam::Servers;
use crate::backend::{self, Driver, Endpoint};
use crate::error::{Failure, InputError};
use crate::redact::redact_url;
use crate::scenario::{DatabasePlan, ProviderKind};
use anyhow::{Context, Result, anyhow, bail};
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

pub use container::check_available;
pub use local::LocalCluster;

/// How a server is obtained.
#[async_trait]
pub trait Provider: Sync {
    fn kind(&self) -> ProviderKind;
    /// Whether it can work here; if not, why (one clause).
    async fn available(&self, plan: &DatabasePlan) -> Result<(), String>;
    async fn provision(&self, plan: &DatabasePlan) -> Result<Server>;
}

/// What the run owns of its server, to restart and remove.
pub(crate) enum Owned {
    Nothing,
    Container(Box<container::DbContainer>),
    Local(std::sync::Mutex<LocalCluster>),
}

/// A database server ready for the run.
pub struct Server {
    /// The provider that was used (never `Auto`).
    pub provider: ProviderKind,
    /// Human description: image and container id, data directory, or the redacted URL.
    pub description: String,
    /// `SELECT version()` of the server.
    pub version: String,
    /// Why `auto` passed over the providers it tried before this one, one line each
    /// (`container skipped: …`); empty for an explicit provider.
    pub skipped: Vec<String>,
    /// Where its data lives and how the run reaches it, so that results on different
    /// storage or paths are never taken as like with like unsaid.
    pub place: Place,
    endpoint: Arc<dyn Endpoint>,
    owned: Owned,
}

/// Where a server's data lives and the path the run's connections take to it.
#[derive(Debug, Clone, Default)]
pub struct Place {
    /// `a Docker volume at /var/lib/postgresql/data`, `the container's layer
    /// (fuse-overlayfs)`, `the host's filesystem`, or not known: the same words run to run.
    pub storage: String,
    /// `the container's own address 172.17.0.3:5432`, `the published port 127.0.0.1:41234
    /// (through docker-proxy)`, `127.0.0.1:41234`, or the given URL's host.
    pub route: String,
}

impl Place {
    /// `data on …; reached at …`, for the run's database line.
    pub fn words(&self) -> String {
        format!("data on {}; reached at {}", self.storage, self.route)
    }
}

impl Server {
    /// A server as a provider made it, described by asking it.
    async fn new(
        provider: ProviderKind,
        description: String,
        place: Place,
        endpoint: Arc<dyn Endpoint>,
        owned: Owned,
    ) -> Result<Server> {
        let facts = endpoint
            .describe()
            .await
            .context("asking the server's version")?;
        Ok(Server {
            provider,
            description,
            version: facts.version,
            skipped: Vec::new(),
            place,
            endpoint,
            owned,
        })
    }

    pub fn endpoint(&self) -> Arc<dyn Endpoint> {
        self.endpoint.clone()
    }

    /// Id of the container when the `container` provider started the server.
    pub fn container_id(&self) -> Option<&str> {
        match &self.owned {
            Owned::Container(c) => Some(c.id()),
            _ => None,
        }
    }

    /// The server's main process on this machine, when the run started it (its CPU is
    /// told apart from everyone else's); `None` while a restart holds it.
    pub fn process_id(&self) -> Option<u32> {
        match &self.owned {
            Owned::Nothing => None,
            Owned::Container(c) => c.process_id(),
            Owned::Local(l) => l.try_lock().ok()?.process_id(),
        }
    }

    /// Whether this run started the server (and so may stop it).
    pub fn is_owned(&self) -> bool {
        !matches!(self.owned, Owned::Nothing)
    }

    /// Stops the server and starts it again (`restart_server`), then waits until it accepts
    /// connections. Only for servers the run started.
    pub async fn restart(
        &self,
        mode: ShutdownMode,
        down_for: Duration,
        timeout: Duration,
    ) -> Result<()> {
        match &self.owned {
            Owned::Nothing => {
                bail!("restart_server needs a server the run started (provider container or local)")
            }
            Owned::Container(c) => {
                c.restart(mode, down_for).await?;
                wait_until_ready(&*self.endpoint, timeout, &**c).await
            }
            Owned::Local(l) => {
                tokio::task::block_in_place(|| l.lock().map(|mut c| c.shut_down(mode)).ok());
                tokio::time::sleep(down_for).await;
                l.lock()
                    .map_err(|_| anyhow!("the local server's lock is poisoned"))?
                    .start_again()?;
                wait_until_ready(&*self.endpoint, timeout, l).await
            }
        }
    }

    /// Stops and removes what the run started. A `url` server is left alone.
    pub async fn teardown(self) -> Result<()> {
        match self.owned {
            Owned::Nothing => Ok(()),
            Owned::Container(c) => c.remove().await,
            Owned::Local(l) => {
                if let Ok(mut l) = l.into_inner() {
                    tokio::task::spawn_blocking(move || l.stop()).await.ok();
                }
                Ok(())
            }
        }
    }

    /// Leaves the server running after the process exits (`--keep`); returns how to reach it.
    pub fn leak(self) -> String {
        let address = self.endpoint.address();
        match self.owned {
            Owned::Nothing => address,
            Owned::Container(c) => {
                let id = c.id().to_string();
                std::mem::forget(c);
                format!("{address} (container {id}; remove with `docker rm -f {id}`)")
            }
            Owned::Local(l) => {
                let hint = l.lock().map(|l| l.stop_hint()).unwrap_or_default();
                std::mem::forget(l);
                format!("{address} ({hint})")
            }
        }
    }
}

/// Whether a server that does not accept connections yet can still come up (a server
/// process that exited never will).
pub trait Liveness {
    fn check(&mut self) -> impl Future<Output = Result<()>> + Send;
}

/// For servers the run does not control: nothing to check.
pub struct Unknown;

impl Liveness for Unknown {
    async fn check(&mut self) -> Result<()> {
        Ok(())
    }
}

/// Connects, retrying every 100 ms until `timeout` has passed. Between attempts `alive` is
/// asked whether the server can still come up; an error from it ends the wait at once, and
/// so does a refusal that waiting cannot change (a wrong password, an unknown database). An
/// attempt that does not answer is given up at the deadline, so the wait says what it took.
pub async fn wait_until_ready(
    endpoint: &dyn Endpoint,
    timeout: Duration,
    mut alive: impl Liveness,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let attempt = tokio::time::timeout(left.max(Duration::from_millis(100)), endpoint.ping());
        let answer = attempt.await.unwrap_or_else(|_| {
            Err(BackendError::new(
                ErrorClass::Connection,
                "no answer before the deadline",
            ))
        });
        match answer {
            Ok(()) => return Ok(()),
            Err(e) if e.is_permanent() => {
                return Err(e).context("the server answered but refused the connection");
            }
            Err(e) => {
                alive.check().await?;
                if Instant::now() >= deadline {
                    bail!(
                        "the server did not accept connections within {} (last error: {e})",
                        humantime::format_duration(timeout)
                    );
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// How long the `url` provider retries a server that does not answer: a given server
/// should be up (a CI service waits for its health check), so a refused connection is
/// reported after a few seconds, not held for a server's start-up time.
const URL_READY_TIMEOUT: Duration = Duration::from_secs(3);

/// An existing server.
struct UrlProvider;

#[async_trait]
impl Provider for UrlProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Url
    }

    async fn available(&self, plan: &DatabasePlan) -> Result<(), String> {
        match plan.url {
            Some(_) => Ok(()),
            None => Err("no --database-url, database.url or DATABASE_URL".into()),
        }
    }

    async fn provision(&self, plan: &DatabasePlan) -> Result<Server> {
        let url = plan.url.as_deref().unwrap_or_default();
        let shown = redact_url(url);
        // The plan has checked the URL (and refused what the engine cannot do on it).
        let driver = backend::driver(plan.engine);
        let reach = |settings| {
            driver
                .endpoint(url, settings)
                .map_err(|e| anyhow!("parsing {shown}: {e}"))
        };
        // A given server should already be up: retry it for at most URL_READY_TIMEOUT.
        let timeout = plan.startup_timeout.min(URL_READY_TIMEOUT);
        let bare = reach(&[])?;
        wait_until_ready(&*bare, timeout, Unknown)
            .await
            .with_context(|| format!("connecting to {shown}"))?;
        let refused = bare
            .refused_session_setting(&plan.settings)
            .await
            .with_context(|| format!("asking {shown} about database.settings"))?;
        if let Some((name, reason)) = refused {
            let key = format!("database.settings.{name}");
            return Err(InputError::new(shown, key, reason).into());
        }
        let endpoint = reach(&plan.settings)?;
        let place = Place {
            storage: "not known (a server the run did not start)".into(),
            route: "the URL given".into(),
        };
        Server::new(ProviderKind::Url, shown, place, endpoint, Owned::Nothing).await
    }
}

/// The servers `driver`'s engine lets the harness start; the reason, naming the url provider,
/// for an engine that has none.
fn servers_of(driver: &'static dyn Driver) -> Result<&'static dyn Servers, String> {
    driver.servers().ok_or_else(|| {
        format!(
            "the harness cannot start a server for {}; name one with --db url",
            driver.facts().label
        )
    })
}

/// A provider's failure: bad input when the server refused what the scenario asks of it
/// (a setting), else a failed run.
fn classified(e: anyhow::Error) -> Failure {
    match e.downcast::<InputError>() {
        Ok(refused) => Failure::Input(refused),
        Err(e) => Failure::Run(e),
    }
}

/// The providers `auto` tries, in order.
const PROVIDERS: [&dyn Provider; 3] = [
    &UrlProvider,
    &container::ContainerProvider,
    &local::LocalProvider,
];

fn provider(kind: ProviderKind) -> Option<&'static dyn Provider> {
    PROVIDERS.into_iter().find(|p| p.kind() == kind)
}

/// Obtains a server as the plan says. `auto` takes the first provider that can work here
/// (a URL if one is given, else a container if Docker answers and the image is available,
/// else a local server if the binaries are installed), and otherwise fails with one
/// message listing what was tried; the server it returns says why each one before it was
/// skipped.
pub async fn provision(plan: &DatabasePlan) -> Result<Server, Failure> {
    if let Some(p) = provider(plan.provider) {
        if let Err(why) = p.available(plan).await {
            return Err(anyhow!(
                "{} provider: {why}. Instead: {}",
                p.kind().as_str(),
                plan.engine
                    .container_alternatives(&plan.image, plan.version.as_ref())
            )
            .into());
        }
        let server = p.provision(plan).await.map_err(classified)?;
        return of_version(plan, server).await;
    }
    let mut skipped = Vec::new();
    for p in PROVIDERS {
        match p.available(plan).await {
            Ok(()) => {
                let mut server = p.provision(plan).await.map_err(classified)?;
                server.skipped = skipped;
                return of_version(plan, server).await;
            }
            Err(why) => skipped.push(format!("{} skipped: {why}", p.kind().as_str())),
        }
    }
    Err(anyhow!(
        "no {} server available; tried {}. Install Docker and {}",
        plan.engine.label(),
        skipped.join("; "),
        plan.engine
            .container_alternatives(&plan.image, plan.version.as_ref())
    )
    .into())
}

/// The server, when it is the version the plan asks for (`database.version`); else it is
/// given back and refused in one line: a url server of another version, an image whose tag
/// misnames the server in it, binaries of another version.
async fn of_version(plan: &DatabasePlan, server: Server) -> Result<Server, Failure> {
    let Some(want) = &plan.version else {
        return Ok(server);
    };
    let number = crate::version::number_in(&server.version);
    if number.is_some_and(|n| want.agrees_with(n)) {
        return Ok(server);
    }
    let label = plan.engine.label();
    let refused = InputError::new(
        server.description.clone(),
        "database.version",
        format!(
            "the scenario asks for {label} {want} and this server is {label} {}; point the run at a {label} {want} server, or drop database.version to measure this one",
            number.unwrap_or(&server.version)
        ),
    );
    server.teardown().await.ok();
    Err(Failure::Input(refused))
}

/// Two TCP ports on 127.0.0.1 that nothing listens on right now (both held while the
/// second is found, so they differ).
fn free_ports() -> Result<crate::backend::seam::Ports> {
    let bind = || std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port");
    let (main, admin) = (bind()?, bind()?);
    Ok(crate::backend::seam::Ports {
        main: main.local_addr()?.port(),
        admin: admin.local_addr()?.port(),
    })
}

/// The last `n` non-empty lines of a log, joined with " | " (errors stay on one line).
fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = &lines[lines.len().saturating_sub(n)..];
    if tail.is_empty() {
        "(empty)".to_string()
    } else {
        tail.join(" | ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::queue::QueuePlan;
    use crate::backend::seam::{InstallError, ServerFacts};

    /// A server that takes connections and never answers.
    struct Silent;

    #[async_trait]
    impl Endpoint for Silent {
        fn address(&self) -> String {
            "silent://".into()
        }
        async fn ping(&self) -> Result<(), BackendError> {
            std::future::pending().await
        }
        async fn describe(&self) -> Result<ServerFacts, BackendError> {
            std::future::pending().await
        }
        async fn install(
            &self,
            _: &str,
            _: &QueuePlan,
            _: bool,
        ) -> Result<Arc<dyn backend::Backend>, InstallError> {
            std::future::pending().await
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_server_that_never_answers_is_given_up_at_the_deadline() {
        let started = Instant::now();
        let waited = tokio::time::timeout(
            Duration::from_secs(60),
            wait_until_ready(&Silent, Duration::from_secs(10), Unknown),
        )
        .await
        .expect("the wait ends by itself");
        let e = waited.unwrap_err().to_string();
        assert!(e.contains("within 10s"), "{e}");
        // Paused time: the virtual clock says when it gave up.
        assert!(started.elapsed() < Duration::from_secs(11), "{e}");
    }
}
