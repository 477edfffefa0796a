//! A Kafka broker that loses its log mid-run: restarted without its storage, or with the
//! jobs' topic deleted. The run must survive its clients, end with exit 1 and a summary, and
//! its proof must name the lost jobs as the broker's loss, each with where the broker had
//! acknowledged its record.

use crate::support::{Background, require_kafka_binaries, shared_kafka_url};
use rdkafka::admin::{AdminClient, AdminOptions};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A Tansu broker of this test's own (memory storage), so that it can be killed.
struct OwnBroker {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

fn tansu() -> PathBuf {
    let dir = std::env::var("DBQ_TANSU_BINDIR").unwrap_or_else(|_| "target/tansu/bin".into());
    std::fs::canonicalize(Path::new(&dir).join("tansu")).expect("tansu built")
}

impl OwnBroker {
    fn start() -> OwnBroker {
        require_kafka_binaries();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = tempfile::tempdir().unwrap();
        let child = Self::spawn(port, dir.path());
        OwnBroker { child, port, dir }
    }

    fn spawn(port: u16, dir: &Path) -> Child {
        let listener = format!("tcp://127.0.0.1:{port}");
        let child = Command::new(tansu())
            .arg("broker")
            .args(["--listener-url", &listener])
            .args(["--advertised-listener-url", &listener])
            .args(["--storage-engine", "memory://tansu/"])
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "tansu does not listen on {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        child
    }

    /// SIGKILL, then the same broker on the same port, its log gone.
    fn kill_and_restart(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.child = Self::spawn(self.port, self.dir.path());
    }

    fn url(&self) -> String {
        format!(
            "kafka://127.0.0.1:{}?batch.num.messages=1&fetch.wait.max.ms=10",
            self.port
        )
    }
}

impl Drop for OwnBroker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `dbq-bench run smoke.toml` on Kafka at `url`, with `disrupt` called once its journal
/// holds 1,200 lines (the load under way); its exit status and its last lines, last first.
fn run_disrupted(url: &str, out: &Path, disrupt: impl FnOnce(&str)) -> (ExitStatus, String) {
    let args = [
        "run",
        "scenarios/smoke.toml",
        "--db",
        "url",
        "--database-url",
        url,
    ];
    let sets = [
        "--set",
        "database.engine=\"kafka\"",
        "--set",
        "phases.1.duration=\"20s\"",
    ];
    let mut run = Background::start(&[&args[..], &sets[..]].concat(), out);
    let journal = run.journal_of(1200);
    let ns: serde_json::Value = serde_json::from_str(journal.lines().next().unwrap()).unwrap();
    disrupt(ns["namespace"].as_str().unwrap());
    let status = run.ended_within(Duration::from_secs(240));
    (status, run.said_last().join("\n"))
}

/// Exit 1, a summary, and every lost job the broker's loss, named with its offset.
fn assert_the_brokers_loss(status: ExitStatus, said: &str, out: &Path) {
    assert_eq!(status.code(), Some(1), "it said, last first:\n{said}");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).expect("a summary"))
            .unwrap();
    let proof = &summary["accounting"];
    let lost = proof["lost_total"].as_u64().unwrap();
    assert!(lost > 0, "{proof}");
    assert_eq!(proof["lost_by_queue"].as_u64(), Some(lost), "{proof}");
    assert_eq!(summary["jobs"]["lost_by_queue"].as_u64(), Some(lost));
    for job in proof["lost"].as_array().unwrap() {
        let why = job["why"].as_str().unwrap_or_default();
        assert!(
            why.starts_with("the broker acknowledged its record at ") && why.contains(" offset "),
            "{job}"
        );
    }
    // A worker that stopped on the loss (a permanent error) and exited is no crash.
    let deaths = summary["faults"]["worker_deaths"].as_object().cloned();
    assert!(
        deaths
            .iter()
            .flatten()
            .all(|(how, _)| !how.contains("status 0")),
        "{deaths:?}"
    );
    assert!(
        proof["verdict"]
            .as_str()
            .unwrap()
            .contains("lost by the queue itself"),
        "{proof}"
    );
}

#[test]
fn a_broker_restarted_without_its_log_is_named_as_the_loser_of_the_jobs() {
    let mut broker = OwnBroker::start();
    let out = tempfile::tempdir().unwrap();
    let (status, said) = run_disrupted(&broker.url(), out.path(), |_| broker.kill_and_restart());
    assert_the_brokers_loss(status, &said, out.path());
}

#[test]
fn a_jobs_topic_deleted_mid_run_is_named_as_the_brokers_loss() {
    let out = tempfile::tempdir().unwrap();
    let url = shared_kafka_url();
    let bootstrap = url
        .trim_start_matches("kafka://")
        .split('?')
        .next()
        .unwrap()
        .to_string();
    let (status, said) = run_disrupted(url, out.path(), |ns| {
        let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
            .set("bootstrap.servers", &bootstrap)
            .create()
            .unwrap();
        let rt = tokio::runtime::Runtime::new().unwrap();
        let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
        let jobs = format!("{ns}.jobs");
        for deleted in rt
            .block_on(admin.delete_topics(&[&jobs], &options))
            .unwrap()
        {
            deleted.unwrap();
        }
    });
    assert_the_brokers_loss(status, &said, out.path());
}
