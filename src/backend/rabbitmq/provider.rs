//! How the providers make a RabbitMQ broker: a throwaway node from this machine's packages
//! (local: its own node name, data and log directories, ports and Erlang cookie; Erlang's
//! shared port mapper, epmd, is the one thing it shares with other nodes on the machine), or
//! a container of an image that behaves like the official `rabbitmq`. `database.settings`
//! are the `rabbit` application's environment (`-rabbit key value`, values as Erlang terms,
//! e.g. `vm_memory_high_watermark = "0.6"`).

use super::{RabbitEndpoint, admin};
use crate::backend::seam::{ContainerImage, Endpoint, LocalBinaries, LocalServer, Ports};
use anyhow::{Result, anyhow};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

/// `-rabbit key value …`: what the scenario sets, as arguments the broker's Erlang VM reads,
/// after the harness's own: the queues and connections report their figures every second,
/// and the management API takes them in every second (both 5 s by default), as often as
/// the sampler asks and soon enough for `kill_backends` to find a new connection by name.
fn arguments(settings: &[(String, String)]) -> Vec<String> {
    let mut args: Vec<String> = [
        "-rabbit",
        "collect_statistics_interval",
        "1000",
        "-rabbitmq_management",
        "sample_retention_policies",
        "[{global,[{605,1}]},{basic,[{605,1}]},{detailed,[{605,1}]}]",
    ]
    .map(String::from)
    .into();
    args.extend(
        settings
            .iter()
            .flat_map(|(k, v)| ["-rabbit".to_string(), k.clone(), v.clone()]),
    );
    args
}

/// The plugin that serves the management API.
const MANAGEMENT: &str = "rabbitmq_management";

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
    /// script exec the VM, so the provider's signals reach the broker), with the management
    /// plugin only, its API on 127.0.0.1:`ports.admin`.
    fn serve(
        &self,
        bins: &LocalBinaries,
        dir: &Path,
        ports: Ports,
        settings: &[(String, String)],
    ) -> Command {
        let port = ports.main;
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
            .env("RABBITMQ_ENABLED_PLUGINS", MANAGEMENT)
            .env("NOTIFY_SOCKET", at("notify.sock"))
            .arg("-rabbitmq_management")
            .arg("tcp_config")
            .arg(format!("[{{port,{}}},{{ip,\"127.0.0.1\"}}]", ports.admin))
            .args(arguments(settings));
        cmd
    }

    /// The `guest` account, which may connect from loopback only.
    fn endpoint(&self, ports: Ports) -> Arc<dyn Endpoint> {
        let url = format!("amqp://guest:guest@127.0.0.1:{}/%2f", ports.main);
        Arc::new(RabbitEndpoint::new(url, ports.admin))
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

    fn admin_port(&self) -> Option<u16> {
        Some(admin::DEFAULT_PORT)
    }

    fn environment(&self) -> Vec<(&'static str, String)> {
        vec![("RABBITMQ_ENABLED_PLUGINS", MANAGEMENT.to_string())]
    }

    fn password_variable(&self) -> &'static str {
        "RABBITMQ_DEFAULT_PASS"
    }

    /// `rabbitmq-server -rabbit loopback_users [] …`: `guest` may connect through the
    /// container's port, with the run's password.
    fn command(&self, settings: &[(String, String)], password: &str, _ports: Ports) -> Vec<String> {
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

    fn endpoint(&self, host: &str, ports: Ports, password: &str) -> Arc<dyn Endpoint> {
        let url = format!("amqp://guest:{password}@{host}:{}/%2f", ports.main);
        Arc::new(RabbitEndpoint::new(url, ports.admin))
    }
}
