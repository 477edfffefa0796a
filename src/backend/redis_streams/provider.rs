//! How the providers make a Redis server: a throwaway `redis-server` from this machine's
//! packages (local), or a container of an image that behaves like the official `redis`.
//! Both start with the durability of a database's per-commit flush unless the scenario says
//! otherwise: the append-only file fsynced before every reply (`appendonly yes`,
//! `appendfsync always`) and no background snapshots (`save ""`), whose forks would disturb
//! the measurement. `database.settings` follow as `--key value` and override these.

use super::RedisEndpoint;
use crate::backend::seam::{ContainerImage, Endpoint, LocalBinaries, LocalServer, Ports};
use anyhow::{Result, anyhow};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

/// The durability every server the run starts has unless the scenario sets otherwise.
const DURABLE: [(&str, &str); 3] = [
    ("appendonly", "yes"),
    ("appendfsync", "always"),
    ("save", ""),
];

/// `--key value …`: the defaults the scenario does not override, then its settings.
fn arguments(settings: &[(String, String)]) -> Vec<String> {
    let mut args = Vec::new();
    for (k, v) in DURABLE {
        if !settings.iter().any(|(name, _)| name == k) {
            args.extend([format!("--{k}"), v.to_string()]);
        }
    }
    for (k, v) in settings {
        args.extend([format!("--{k}"), v.clone()]);
    }
    args
}

pub struct Local;
pub static LOCAL: Local = Local;

impl LocalServer for Local {
    fn program(&self) -> &'static str {
        "redis-server"
    }

    fn account(&self) -> &'static str {
        "redis"
    }

    /// `DBQ_REDIS_BINDIR` when set, else /usr/bin and PATH.
    fn binaries(&self) -> Result<LocalBinaries> {
        let dirs = LocalBinaries::search_dirs("DBQ_REDIS_BINDIR", &["/usr/bin"]);
        match dirs.iter().find(|d| d.join("redis-server").is_file()) {
            Some(dir) => Ok(LocalBinaries {
                bin_dir: dir.clone(),
                init: PathBuf::from("mkdir"),
            }),
            None => Err(anyhow!(
                "no redis-server found (DBQ_REDIS_BINDIR, /usr/bin or PATH); install it with `apt-get install redis-server`"
            )),
        }
    }

    /// A data directory is an empty directory.
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
        let port = ports.main;
        let mut cmd = Command::new(bins.bin_dir.join("redis-server"));
        cmd.arg("--port")
            .arg(port.to_string())
            .args(["--bind", "127.0.0.1", "--daemonize", "no"])
            .arg("--dir")
            .arg(dir.join("data"))
            .arg("--pidfile")
            .arg(dir.join("redis.pid"))
            .args(arguments(settings));
        cmd
    }

    fn endpoint(&self, ports: Ports) -> Arc<dyn Endpoint> {
        let port = ports.main;
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}/0"))
            .expect("a loopback URL parses");
        Arc::new(RedisEndpoint::new(client))
    }

    fn stop_hint(&self, dir: &Path) -> String {
        format!("kill $(cat {}/redis.pid)", dir.display())
    }
}

pub struct Container;
pub static CONTAINER: Container = Container;

impl ContainerImage for Container {
    fn port(&self) -> u16 {
        6379
    }

    /// The official image takes no password variable; the password goes in the command.
    fn password_variable(&self) -> &'static str {
        "REDIS_PASSWORD"
    }

    /// `redis-server --requirepass … --key value …`.
    fn command(&self, settings: &[(String, String)], password: &str, _ports: Ports) -> Vec<String> {
        let mut cmd = vec![
            "redis-server".to_string(),
            "--requirepass".into(),
            password.into(),
        ];
        cmd.extend(arguments(settings));
        cmd
    }

    fn endpoint(&self, host: &str, ports: Ports, password: &str) -> Arc<dyn Endpoint> {
        let port = ports.main;
        let client = redis::Client::open(format!("redis://:{password}@{host}:{port}/0"))
            .expect("an address and a port parse");
        Arc::new(RedisEndpoint::new(client))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_override_the_durable_defaults() {
        let args = arguments(&[("appendfsync".into(), "everysec".into())]);
        assert_eq!(
            args,
            [
                "--appendonly",
                "yes",
                "--save",
                "",
                "--appendfsync",
                "everysec"
            ]
        );
    }
}
