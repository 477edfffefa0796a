//! The `container` provider: a server in a container started with testcontainers, from an
//! image that behaves like the engine's official one (see each engine's `ContainerImage`).
//! On machines without a registry, `docker/build-postgres-image.sh` and
//! `docker/build-mariadb-image.sh` build such images from Debian packages.

use super::{Liveness, Owned, Place, Provider, Server, free_ports, last_lines, wait_until_ready};
use crate::backend::engine::ShutdownMode;
use crate::backend::engine::split_image;
use crate::backend::seam::{ContainerImage, Endpoint, Ports, Servers};
use crate::backend::{self, Driver};
use crate::scenario::{DatabasePlan, ProviderKind};
use anyhow::{Context, Result, anyhow, bail};
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;
use testcontainers::bollard::Docker;
use testcontainers::bollard::query_parameters::KillContainerOptionsBuilder;
use testcontainers::core::{IntoContainerPort, WaitFor};
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, ContainerRequest, GenericImage, ImageExt};

pub(super) struct ContainerProvider;

#[async_trait]
impl Provider for ContainerProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Container
    }

    async fn available(&self, plan: &DatabasePlan) -> Result<(), String> {
        super::servers_of(backend::driver(plan.engine))?;
        check_available(&plan.image)
            .await
            .map_err(|e| format!("image {}: {e:#}", plan.image))
    }

    async fn provision(&self, plan: &DatabasePlan) -> Result<Server> {
        let driver = backend::driver(plan.engine);
        let (c, endpoint, place) =
            start(driver, &plan.image, &plan.settings, plan.startup_timeout).await?;
        let description = format!(
            "container {} from {} on network {}",
            &c.id()[..12.min(c.id().len())],
            c.image,
            c.network
        );
        Server::new(
            ProviderKind::Container,
            description,
            place,
            endpoint,
            Owned::Container(Box::new(c)),
        )
        .await
    }
}

/// A running database container owned by the run.
pub struct DbContainer {
    container: ContainerAsync<GenericImage>,
    servers: &'static dyn Servers,
    pub image: String,
    /// Its network, its own (so a restart gives it back its address), removed with it.
    network: String,
    /// Its address on that network when it started, if Docker named one.
    address: std::sync::Mutex<Option<String>>,
    /// The container's main process as this machine numbers it (0: unknown), read when it
    /// starts and after each restart.
    pid: std::sync::atomic::AtomicU32,
    /// Its entry among what the process started, forgotten when the handle goes.
    _remembered: crate::leftovers::Remembered,
}

impl DbContainer {
    pub fn id(&self) -> &str {
        self.container.id()
    }

    /// The container's main process on this machine, when Docker said.
    pub fn process_id(&self) -> Option<u32> {
        Some(self.pid.load(std::sync::atomic::Ordering::Relaxed)).filter(|p| *p > 0)
    }

    /// Where the server keeps its data: the volumes the image declares (as the official
    /// images do), a tmpfs or a bind mount, else the container's own layer, named by its
    /// storage driver (fuse-overlayfs flushed at half a volume's speed on one machine).
    async fn storage(&self) -> String {
        let Ok(docker) = Docker::connect_with_defaults() else {
            return "not known (Docker did not answer)".into();
        };
        match docker.inspect_container(self.id(), None).await {
            Ok(c) => storage_of(c.mounts.unwrap_or_default(), c.graph_driver.map(|d| d.name)),
            Err(_) => "not known (Docker did not answer)".into(),
        }
    }

    /// Asks Docker for the container's main process (0 when it cannot say).
    async fn read_pid(&self) {
        let pid = match Docker::connect_with_defaults() {
            Ok(docker) => docker
                .inspect_container(self.id(), None)
                .await
                .ok()
                .and_then(|c| c.state?.pid)
                .and_then(|p| u32::try_from(p).ok())
                .unwrap_or(0),
            Err(_) => 0,
        };
        self.pid.store(pid, std::sync::atomic::Ordering::Relaxed);
    }

    /// Stops the server in the container (the engine's signal for `mode`, sent to its main
    /// process), waits until the container has stopped, stays down `down_for`, and starts the
    /// container again. Its host port is fixed and its network its own, so neither address
    /// changes (checked).
    pub async fn restart(&self, mode: ShutdownMode, down_for: Duration) -> Result<()> {
        let docker =
            Docker::connect_with_defaults().map_err(|e| anyhow!("no Docker client: {e}"))?;
        let signal = self.servers.shutdown_signal(mode).as_str();
        let options = KillContainerOptionsBuilder::new().signal(signal).build();
        docker
            .kill_container(self.id(), Some(options))
            .await
            .context("signalling the container")?;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while self.container.is_running().await.unwrap_or(false) {
            if tokio::time::Instant::now() > deadline {
                bail!("the container did not stop within 30s after {signal}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(down_for).await;
        self.container
            .start()
            .await
            .context("starting the container again")?;
        self.read_pid().await;
        let before = self.address.lock().map(|a| a.clone()).unwrap_or(None);
        if let Some(before) = before {
            let now = self.read_address().await;
            if now.as_deref() != Some(before.as_str()) {
                bail!(
                    "the restarted container came back on another address ({before} → {}), so the run's connections cannot find it",
                    now.as_deref().unwrap_or("none")
                );
            }
        }
        Ok(())
    }

    /// Stops and removes the container.
    pub async fn remove(self) -> Result<()> {
        let id = self.container.id().to_string();
        let network = self.network.clone();
        self.container
            .rm()
            .await
            .with_context(|| format!("removing container {id}"))?;
        // testcontainers removes the network it made in the background; this waits for it.
        if let Ok(docker) = Docker::connect_with_defaults() {
            docker.remove_network(&network).await.ok();
        }
        Ok(())
    }
}

impl Liveness for &DbContainer {
    async fn check(&mut self) -> Result<()> {
        (&self.container).check().await
    }
}

impl Liveness for &ContainerAsync<GenericImage> {
    async fn check(&mut self) -> Result<()> {
        if self.is_running().await.unwrap_or(false) {
            Ok(())
        } else {
            Err(anyhow!("the container exited"))
        }
    }
}

/// `a Docker volume at /var/lib/postgresql/data`, or `the container's layer (fuse-overlayfs)`.
fn storage_of(
    mounts: Vec<testcontainers::bollard::models::MountPoint>,
    driver: Option<String>,
) -> String {
    let mounted: Vec<String> = mounts
        .into_iter()
        .filter_map(|m| {
            let at = m.destination?;
            match m.typ.as_deref() {
                Some("volume") => Some(format!("a Docker volume at {at}")),
                Some("tmpfs") => Some(format!("a tmpfs at {at}")),
                Some("bind") => Some(format!("a host directory bound at {at}")),
                _ => None,
            }
        })
        .collect();
    match (mounted.is_empty(), driver) {
        (false, _) => mounted.join(", "),
        (true, Some(d)) => format!("the container's layer ({d})"),
        (true, None) => "the container's layer".into(),
    }
}

fn request(
    driver: &dyn Driver,
    servers: &dyn Servers,
    image: &str,
    password: &str,
    settings: &[(String, String)],
    ports: Ports,
) -> ContainerRequest<GenericImage> {
    let spec = servers.container();
    let (name, tag) = split_image(image);
    let inner = spec.port().tcp();
    let mut image = GenericImage::new(name, tag).with_exposed_port(inner);
    if let Some(admin) = spec.admin_port() {
        image = image.with_exposed_port(admin.tcp());
    }
    let mut request = image
        // Readiness is checked by connecting (see `wait_until_ready`), not by log lines: the
        // official images print their "ready" line twice, once for a socket-only init
        // server.
        .with_wait_for(WaitFor::Nothing)
        .with_env_var(spec.password_variable(), password)
        .with_label("dbq-bench", driver.facts().name)
        // A fixed host port keeps the address stable if the container is restarted.
        .with_mapped_port(ports.main, inner)
        .with_cmd(spec.command(settings, password, ports));
    if let Some(admin) = spec.admin_port() {
        request = request.with_mapped_port(ports.admin, admin.tcp());
    }
    for (name, value) in spec.environment() {
        request = request.with_env_var(name, value);
    }
    request
}

/// Whether this provider can work here: a Docker engine answers and the image is present or
/// can be pulled. The error says which of the two failed.
pub async fn check_available(image: &str) -> Result<()> {
    let docker = Docker::connect_with_defaults().map_err(|e| anyhow!("no Docker client: {e}"))?;
    tokio::time::timeout(Duration::from_secs(5), docker.ping())
        .await
        .map_err(|_| anyhow!("the Docker engine did not answer within 5s"))?
        .map_err(|e| anyhow!("the Docker engine does not answer: {e}"))?;
    if docker.inspect_image(image).await.is_ok() {
        return Ok(());
    }
    let (name, tag) = split_image(image);
    GenericImage::new(name, tag)
        .pull_image()
        .await
        .map(|_| ())
        .map_err(|e| anyhow!("image {image} is not present and cannot be pulled: {e}"))
}

/// Starts a container from `image` with `settings` as the server's arguments, on a network
/// of its own, and waits until it accepts connections. The run then reaches it on the
/// container's own address where this machine can (no docker-proxy between the load and
/// the queue: it took a third of a core at 2,000 jobs/s), else on the published port; the
/// place says which, and why.
pub async fn start(
    driver: &'static dyn Driver,
    image: &str,
    settings: &[(String, String)],
    timeout: Duration,
) -> Result<(DbContainer, Arc<dyn Endpoint>, Place)> {
    let servers = super::servers_of(driver).map_err(|e| anyhow!(e))?;
    let spec = servers.container();
    let password = format!("dbq{:016x}", rand::random::<u64>());
    let ports = free_ports()?;
    let network = format!("dbq-bench-{:012x}", rand::random::<u64>() >> 16);
    let container = request(driver, servers, image, &password, settings, ports)
        .with_network(&network)
        .with_startup_timeout(timeout)
        .start()
        .await
        .with_context(|| format!("starting a container from image {image}"))?;
    let published = spec.endpoint("127.0.0.1", ports, &password);
    if let Err(e) = wait_until_ready(&*published, timeout, &container).await {
        let log = container.stderr_to_vec().await.unwrap_or_default();
        let tail = last_lines(&String::from_utf8_lossy(&log), 3);
        container.rm().await.ok();
        bail!("{e:#}; container log: {tail}");
    }
    let id = container.id().to_string();
    let c = DbContainer {
        container,
        servers,
        image: image.to_string(),
        network,
        address: Default::default(),
        pid: Default::default(),
        _remembered: crate::leftovers::Remembered(crate::leftovers::remember(
            crate::leftovers::Started::Container { id },
        )),
    };
    c.read_pid().await;
    let (endpoint, route) = c.route(spec, ports, &password, published).await;
    let place = Place {
        storage: c.storage().await,
        route,
    };
    Ok((c, endpoint, place))
}

impl DbContainer {
    /// The endpoint on the container's own address when it answers there within a few
    /// seconds, else the published one; and the route in words.
    async fn route(
        &self,
        spec: &dyn ContainerImage,
        published: Ports,
        password: &str,
        fallback: Arc<dyn Endpoint>,
    ) -> (Arc<dyn Endpoint>, String) {
        let through_proxy = |why: &str| {
            let words = format!(
                "the published port 127.0.0.1:{} (through docker-proxy: {why})",
                published.main
            );
            (fallback.clone(), words)
        };
        if !spec.reachable_directly() {
            return through_proxy("the server tells clients to come back to it");
        }
        let Some(ip) = self.read_address().await else {
            return through_proxy("Docker named no address of the container's");
        };
        let inner = Ports {
            main: spec.port(),
            admin: spec.admin_port().unwrap_or(0),
        };
        let direct = spec.endpoint(&ip, inner, password);
        match wait_until_ready(&*direct, DIRECT_PROBE, self).await {
            Ok(()) => {
                let words = format!("the container's own address {ip}:{}", inner.main);
                (direct, words)
            }
            Err(_) => through_proxy(&format!(
                "its own address {ip} did not answer from this machine within {}s",
                DIRECT_PROBE.as_secs()
            )),
        }
    }

    /// The container's address on its network, remembered to check a restart keeps it.
    async fn read_address(&self) -> Option<String> {
        let docker = Docker::connect_with_defaults().ok()?;
        let c = docker.inspect_container(self.id(), None).await.ok()?;
        let networks = c.network_settings?.networks?;
        let ip = networks.get(&self.network)?.ip_address.clone()?;
        let ip = Some(ip).filter(|ip| !ip.is_empty())?;
        let mut kept = self.address.lock().unwrap_or_else(|e| e.into_inner());
        kept.get_or_insert_with(|| ip.clone());
        Some(ip)
    }
}

/// How long the container's own address may take to answer once the published port has.
const DIRECT_PROBE: Duration = Duration::from_secs(5);

#[cfg(test)]
mod tests {
    use super::*;
    use testcontainers::bollard::models::MountPoint;

    fn mount(typ: &str, at: &str) -> MountPoint {
        MountPoint {
            typ: Some(typ.into()),
            destination: Some(at.into()),
            ..MountPoint::default()
        }
    }

    #[test]
    fn the_data_is_on_what_docker_mounted_else_in_the_layer() {
        let data = "/var/lib/postgresql/data";
        let volume = vec![mount("volume", data)];
        assert_eq!(
            storage_of(volume, Some("overlay2".into())),
            "a Docker volume at /var/lib/postgresql/data"
        );
        let tmpfs = vec![mount("tmpfs", data)];
        assert_eq!(
            storage_of(tmpfs, None),
            "a tmpfs at /var/lib/postgresql/data"
        );
        assert_eq!(
            storage_of(Vec::new(), Some("fuse-overlayfs".into())),
            "the container's layer (fuse-overlayfs)"
        );
        assert_eq!(storage_of(Vec::new(), None), "the container's layer");
    }
}
