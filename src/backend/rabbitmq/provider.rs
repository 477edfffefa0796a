//! How the providers make a RabbitMQ broker: a throwaway node from this machine's packages
//! (local: its own node name, data and log directories, ports and Erlang cookie; Erlang's
//! shared port mapper, epmd, is the one thing it shares with other nodes on the machine), or
//! a container of an image that behaves like the official `rabbitmq`. `database.settings`
//! are the `rabbit` application's environment (`-rabbit key value`, values as Erlang terms,
//! e.g. `vm_memory_high_watermark = "0.6"`).

use super::RabbitEndpoint;
use crate::backend::seam::{ContainerImage, Endpoint, LocalBinaries, LocalServer};
use anyhow::{Result, anyhow};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

/// `-rabbit key value …`: what the scenario sets, as arguments the broker's Erlang VM reads.
fn arguments(settings: &[(String, String)]) -> Vec<String> {
    settings
        .iter()
        .flat_map(|(k, v)| ["-rabbit".to_string(), k.clone(), v.clone()])
        .collect()
}

/// A port free now on 127.0.0.1 (the node's distribution port).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(25672)
}

pub struct Local;
pub static LOCAL: Local = Local;

impl LocalServer for Local {
    fn program(&self) -> &'static str {
        "rabbitmq-server"
    }

    fn account(&self) -> &'static str {
        "rabbitmq"
    }

    /// `DBQ_RABBITMQ_BINDIR` when set, else where Debian installs the broker's scripts.
    fn binaries(&self) -> Result<LocalBinaries> {
        let dir = std::env::var_os("DBQ_RABBITMQ_BINDIR")
            .filter(|d| !d.is_empty())
            .map_or_else(|| PathBuf::from("/usr/lib/rabbitmq/bin"), PathBuf::from);
        match dir.join("rabbitmq-server").is_file() {
            true => Ok(LocalBinaries {
                bin_dir: dir,
                init: PathBuf::from("mkdir"),
            }),
            false => Err(anyhow!(
                "no rabbitmq-server found in {} (DBQ_RABBITMQ_BINDIR); install it with `apt-get install rabbitmq-server`",
                dir.display()
            )),
        }
    }

    fn init(&self, bins: &LocalBinaries, dir: &Path) -> Command {
        let mut cmd = Command::new(&bins.init);
        cmd.arg(dir.join("data")).arg(dir.join("log"));
        cmd
    }

    /// The node runs in the foreground as the child itself (`NOTIFY_SOCKET` makes the
    /// script exec the VM, so the provider's signals reach the broker), without plugins.
    fn serve(
        &self,
        bins: &LocalBinaries,
        dir: &Path,
        port: u16,
        settings: &[(String, String)],
    ) -> Command {
        let mut cmd = Command::new(bins.bin_dir.join("rabbitmq-server"));
        let at = |name: &str| dir.join(name).into_os_string();
        cmd.env("HOME", dir)
            .env("RABBITMQ_NODENAME", format!("dbq{port}@localhost"))
            .env("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1")
            .env("RABBITMQ_NODE_PORT", port.to_string())
            .env("RABBITMQ_DIST_PORT", free_port().to_string())
            .env("RABBITMQ_MNESIA_BASE", at("data"))
            .env("RABBITMQ_LOG_BASE", at("log"))
            .env("RABBITMQ_LOGS", "-")
            .env("RABBITMQ_PID_FILE", at("rabbitmq.pid"))
            .env("RABBITMQ_CONF_ENV_FILE", at("rabbitmq-env.conf"))
            .env("RABBITMQ_CONFIG_FILE", at("rabbitmq"))
            .env("RABBITMQ_ENABLED_PLUGINS", "")
            .env("NOTIFY_SOCKET", at("notify.sock"))
            .args(arguments(settings));
        cmd
    }

    /// The `guest` account, which may connect from loopback only.
    fn endpoint(&self, port: u16) -> Arc<dyn Endpoint> {
        Arc::new(RabbitEndpoint::new(format!(
            "amqp://guest:guest@127.0.0.1:{port}/%2f"
        )))
    }

    fn stop_hint(&self, dir: &Path) -> String {
        format!("kill $(cat {}/rabbitmq.pid)", dir.display())
    }
}

pub struct Container;
pub static CONTAINER: Container = Container;

impl ContainerImage for Container {
    fn port(&self) -> u16 {
        5672
    }

    fn password_variable(&self) -> &'static str {
        "RABBITMQ_DEFAULT_PASS"
    }

    /// `rabbitmq-server -rabbit loopback_users [] …`: `guest` may connect through the
    /// container's port, with the run's password.
    fn command(&self, settings: &[(String, String)], password: &str) -> Vec<String> {
        let mut cmd: Vec<String> = [
            "rabbitmq-server",
            "-rabbit",
            "loopback_users",
            "[]",
            "-rabbit",
            "default_pass",
        ]
        .map(String::from)
        .into();
        cmd.push(format!("<<\"{password}\">>"));
        cmd.extend(arguments(settings));
        cmd
    }

    fn endpoint(&self, host_port: u16, password: &str) -> Arc<dyn Endpoint> {
        Arc::new(RabbitEndpoint::new(format!(
            "amqp://guest:{password}@127.0.0.1:{host_port}/%2f"
        )))
    }

    fn alternatives(&self, image: &str) -> String {
        format!(
            "make the image available (`docker pull {image}`, or, where no registry is reachable, \
             `docker/build-rabbitmq-image.sh` and DBQ_RABBITMQ_IMAGE=dbq-bench-rabbitmq:3.10 or --image), \
             use the broker from the machine's packages with --db local (`apt-get install rabbitmq-server`), \
             or name a broker with --db url --database-url amqp://…"
        )
    }
}
