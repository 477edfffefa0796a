//! How the providers make a Kafka-API broker on a machine like this one, where Debian has no
//! Kafka package and no image registry may be reachable: Tansu (a Kafka-API broker written
//! in Rust, published on crates.io) run from its binary (local) or from an image built around
//! it (container, `docker/build-kafka-image.sh`). Its storage is `memory://` by default (what
//! `cargo install tansu --features dynostore` offers without a database): the log is kept in
//! the broker's memory, so a restart loses it. `database.settings` follow as `--key value`
//! (Tansu's own flags, `storage-engine` among them). Every figure measured on it is labelled
//! with Tansu's name and version.

use super::KafkaEndpoint;
use crate::backend::seam::{ContainerImage, Endpoint, LocalBinaries, LocalServer, Ports};
use anyhow::{Result, anyhow};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

/// The broker's name and version as the labels give them (the version the set-up builds).
pub const SOFTWARE: &str = "Tansu 0.6.0 (a Kafka-API broker, memory storage)";

/// `--key value …`: the memory storage unless the scenario names another, then its settings.
fn arguments(settings: &[(String, String)]) -> Vec<String> {
    let mut args = Vec::new();
    if !settings.iter().any(|(k, _)| k == "storage-engine") {
        args.extend(["--storage-engine".to_string(), "memory://tansu/".into()]);
    }
    for (k, v) in settings {
        args.extend([format!("--{k}"), v.clone()]);
    }
    args
}

/// What the clients of a Tansu broker must set: one record per produce batch. Tansu 0.6.0
/// answers a fetch with the batches that *start* at or after the offset asked for, so a
/// consumer that resumes inside a batch (a new owner of a partition after a rebalance,
/// from the committed offset) skips the rest of that batch, or waits forever when it was
/// the last; and it reports the last batch's first offset + 1 as the high watermark. With
/// batches of several records, four members of a group left 2% of 2,000 records unread
/// while their offsets moved past them; with one record per batch, none. And a short fetch
/// wait: Tansu answers a fetch that found nothing only when its wait runs out, not when a
/// record arrives, so with librdkafka's 500 ms every job waited about that long (end-to-end
/// p50 440 ms at 300 jobs/s; 52 ms with 10 ms, for twice the fetch requests).
pub const TANSU_CLIENT_SETTINGS: [(&str, &str); 2] =
    [("batch.num.messages", "1"), ("fetch.wait.max.ms", "10")];

/// The endpoint of a broker the harness started on 127.0.0.1:`port`.
fn loopback(port: u16) -> Arc<dyn Endpoint> {
    let mut settings = vec![("bootstrap.servers".to_string(), format!("127.0.0.1:{port}"))];
    settings.extend(TANSU_CLIENT_SETTINGS.map(|(k, v)| (k.to_string(), v.to_string())));
    Arc::new(KafkaEndpoint::new(settings, Some(SOFTWARE.to_string())))
}

pub struct Local;
pub static LOCAL: Local = Local;

impl LocalServer for Local {
    fn program(&self) -> &'static str {
        "tansu"
    }

    /// No package made an account for it: `nobody` when the harness runs as root.
    fn account(&self) -> &'static str {
        "nobody"
    }

    /// `DBQ_TANSU_BINDIR` when set, else target/tansu/bin (where scripts/install-tansu puts
    /// it) and PATH.
    fn binaries(&self) -> Result<LocalBinaries> {
        let dirs = LocalBinaries::search_dirs("DBQ_TANSU_BINDIR", &["target/tansu/bin"]);
        match dirs.iter().find(|d| d.join("tansu").is_file()) {
            Some(dir) => Ok(LocalBinaries {
                bin_dir: std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone()),
                init: PathBuf::from("mkdir"),
            }),
            None => Err(anyhow!(
                "no tansu found (DBQ_TANSU_BINDIR, target/tansu/bin or PATH); build it with \
                 scripts/install-tansu (cargo install tansu --version 0.6.0 --features dynostore)"
            )),
        }
    }

    /// A data directory is an empty directory (the memory storage writes nothing).
    fn init(&self, bins: &LocalBinaries, dir: &Path) -> Command {
        let mut cmd = Command::new(&bins.init);
        cmd.arg(dir.join("data"));
        cmd
    }

    fn serve(
        &self,
        bins: &LocalBinaries,
        dir: &Path,
        ports: Ports,
        settings: &[(String, String)],
    ) -> Command {
        let listener = format!("tcp://127.0.0.1:{}", ports.main);
        let mut cmd = Command::new(bins.bin_dir.join("tansu"));
        cmd.arg("broker")
            .args(["--listener-url", &listener])
            .args(["--advertised-listener-url", &listener])
            .current_dir(dir.join("data"))
            .args(arguments(settings));
        cmd
    }

    fn endpoint(&self, ports: Ports) -> Arc<dyn Endpoint> {
        loopback(ports.main)
    }

    fn stop_hint(&self, _dir: &Path) -> String {
        "pkill -f 'tansu broker --listener-url tcp://127.0.0.1'".into()
    }
}

pub struct Container;
pub static CONTAINER: Container = Container;

impl ContainerImage for Container {
    fn port(&self) -> u16 {
        9092
    }

    /// Tansu takes no password for its listener (`--authentication` is off).
    fn password_variable(&self) -> &'static str {
        "TANSU_PASSWORD"
    }

    /// `tansu broker …`, advertising the host's port: clients connect where the metadata
    /// says, and that must be the port mapped on the host.
    fn command(&self, settings: &[(String, String)], _password: &str, ports: Ports) -> Vec<String> {
        let mut cmd = vec![
            "tansu".to_string(),
            "broker".into(),
            "--listener-url".into(),
            "tcp://0.0.0.0:9092".into(),
            "--advertised-listener-url".into(),
            format!("tcp://127.0.0.1:{}", ports.main),
        ];
        cmd.extend(arguments(settings));
        cmd
    }

    /// The published port: the broker advertises it, so clients come back to it.
    fn endpoint(&self, _host: &str, ports: Ports, _password: &str) -> Arc<dyn Endpoint> {
        loopback(ports.main)
    }

    fn reachable_directly(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_storage_is_memory_unless_the_scenario_names_one() {
        assert_eq!(arguments(&[]), ["--storage-engine", "memory://tansu/"]);
        let own = [("storage-engine".to_string(), "s3://tansu/".to_string())];
        assert_eq!(arguments(&own), ["--storage-engine", "s3://tansu/"]);
    }
}
