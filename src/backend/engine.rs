//! What every engine's facts say: which variants, faults and options it runs, what its
//! figures are called, which URLs it takes. The facts themselves live in each engine's folder
//! (`backend/<engine>/facts.rs`); the list of engines, and the questions asked of an engine,
//! are [`super::registry`]'s. Nothing here names an engine, and nothing here imports the
//! registry, so the folders and the registry both build on this file.

use serde::{Deserialize, Serialize};

/// The settings of an engine that takes none beyond every engine's (the scenario's
/// `[queue]`, `[consumers]` …): its `Settings` in the registry's `EngineSettings`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoSettings {}

/// How a server the run started is stopped (the `restart_server` fault).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ShutdownMode {
    /// A clean shutdown: open transactions roll back, the server checkpoints and exits.
    #[default]
    Fast,
    /// Exit at once; crash recovery on the next start.
    Immediate,
}

/// What an engine runs. Validation refuses anything else in one line made from these facts.
#[derive(Debug)]
pub struct Supports {
    /// Queue variants (`queue.variant`), by name.
    pub variants: &'static [&'static str],
    /// Fault kinds (`phases.faults.kind`), by name.
    pub faults: &'static [&'static str],
    /// `queue.fillfactor` and `queue.unlogged`.
    pub table_options: bool,
    /// The transactional outbox (`producers.outbox`).
    pub outbox: bool,
    /// `database.settings` on a server the run does not own (applied per session).
    pub url_session_settings: bool,
    /// `dbq-bench calibrate` (pgbench is PostgreSQL's).
    pub calibrate: bool,
    /// `consumers.claim_mode = "in_transaction"`: a claim held open until the job finishes,
    /// undone by the server when the worker vanishes.
    pub claim_in_transaction: bool,
    /// `consumers.claim_mode = "committed"`: a claim that stands until the job finishes or
    /// the reaper takes it back.
    pub claim_committed: bool,
    /// Scenario keys that only this engine acts on (`queue.rabbitmq_queue`): refused on the
    /// others, in one line naming this engine.
    pub own_keys: &'static [&'static str],
    /// `verify.completion_audit`: the server records each completion, so the proof counts
    /// duplicate completions from the server as well as from the ledger. Where it cannot
    /// (a broker forgets an acknowledged message), the ledger alone counts them.
    pub completion_audit: bool,
    /// `[bystander]`: statements on a table of its own beside the queue.
    pub bystander: bool,
    /// The queue table has planner statistics (ANALYZE): `queue.stale_statistics` and the
    /// `analyze` fault.
    pub planner_statistics: bool,
    /// The queue promises at least once for completions too: a job it hands to a second
    /// worker while the first still runs it (a Kafka rebalance) can be completed by both,
    /// and nothing in the queue can refuse the second (an offset commit does not check who
    /// owns the partition). The proof counts such jobs (`jobs.duplicate_completions`,
    /// `accounting.executions.at_least_once`) and does not fail on them or on the runs
    /// they repeat; a threshold on `jobs.duplicate_completions` does.
    pub at_least_once_completions: bool,
    /// The workers share the queue only as members of one group (Kafka's consumer group):
    /// a step's load starts once the group has formed.
    pub group: bool,
    /// Anyone with access may write records in the harness's own shape (a Kafka topic): the
    /// proof names the records the harness never produced.
    pub provenance: bool,
}

/// What an engine's figures are called: the fields are the same, the statistics behind them
/// are the engine's own.
#[derive(Debug)]
pub struct Words {
    /// `dead_tuples`: dead row versions, or InnoDB's history list length (undo not purged).
    pub dead_tuples: &'static str,
    /// `wal_bytes`: WAL, or the redo log.
    pub wal: &'static str,
    /// What garbage collection of the table is counted.
    pub cleanup: &'static str,
    /// Cleanups run by hand (VACUUM), where the engine has them: counted in the cost line.
    pub manual_cleanup: Option<&'static str>,
    /// What the size figures measure.
    pub size: &'static str,
    /// Whether that size grows with the jobs a run puts through (a table and its indexes),
    /// so that its growth is a cost per job; a broker's memory follows its own warm-up and
    /// backlog instead, and its growth is shown whole.
    pub size_per_job: bool,
    /// The `idle_in_transaction` probes: while the horizon is held, and after its release.
    pub while_held: &'static str,
    pub once_released: &'static str,
    /// Where a broker's own figures (`DbSample::server`) come from; empty for a database.
    pub server_figures: &'static str,
}

/// How a server of the engine is had on a machine: the image the container provider starts by
/// default (and the variable that names another), and the package the local provider runs.
#[derive(Debug)]
pub struct Install {
    /// The official image (`postgres:17`).
    pub image: &'static str,
    /// The variable that names another (`DBQ_POSTGRES_IMAGE`).
    pub variable: &'static str,
    /// Where no registry is reachable: the script that builds one from Debian's packages,
    /// and the tag it builds.
    pub build_script: &'static str,
    pub built_tag: &'static str,
    /// How the server the local provider runs is installed (`apt-get install postgresql`).
    pub local_install: &'static str,
    /// How the test suite has one server of this engine for many tests.
    pub test_server: TestServer,
}

/// How the test suite has one server of an engine to share between its tests: a server of
/// the tester's own, or a throwaway local one it starts once.
#[derive(Debug)]
pub struct TestServer {
    /// The variable that names a server of the tester's own (`DBQ_TEST_DATABASE_URL`).
    pub variable: &'static str,
    /// The settings the throwaway server runs with (durability traded for speed, room for
    /// many tests' connections).
    pub settings: &'static [(&'static str, &'static str)],
    /// The URL of the throwaway server on 127.0.0.1, given its port (and its administrative
    /// API's, for an engine that has one).
    pub url: fn(u16, u16) -> String,
}

/// Splits `registry:5000/library/postgres:17` into name and tag (`latest` when absent).
pub fn split_image(image: &str) -> (String, String) {
    let slash = image.rfind('/').map_or(0, |i| i + 1);
    match image[slash..].rfind(':') {
        Some(i) => (
            image[..slash + i].to_string(),
            image[slash + i + 1..].to_string(),
        ),
        None => (image.to_string(), "latest".to_string()),
    }
}

/// One engine's facts, kept in its folder (`backend/<engine>/facts.rs`).
#[derive(Debug)]
pub struct EngineFacts {
    pub name: &'static str,
    pub label: &'static str,
    /// URL schemes the engine takes (the first is the one it writes).
    pub schemes: &'static [&'static str],
    /// Checks that a URL of this engine can be parsed (the reason when it cannot).
    pub parse_url: fn(&str) -> Result<(), String>,
    /// Its image and package; `None` for an engine whose servers the harness does not start.
    pub install: Option<Install>,
    pub supports: Supports,
    pub words: Words,
    /// Why a server setting belongs to another engine (its vacuum or purge levers), so the
    /// plan refuses it before a server refuses to start; `None` for any other name.
    pub foreign_setting: fn(&str) -> Option<&'static str>,
    /// Where the queue table's reads (scans against index reads) come from.
    pub reads: ReadsFrom,
    /// The engine's client library can crash its whole process when the server fails under
    /// it (librdkafka): workers then run as processes unless `consumers.processes` says
    /// otherwise, so such a crash kills a worker and the run goes on to its proof.
    pub client_may_crash: bool,
    /// Whether the queue, as `queue` installs it, counts a message's lost deliveries, which
    /// counting them as failed attempts (`reaper.count_as_attempt`) needs; why not, where it
    /// does not (a classic RabbitMQ queue, a Kafka topic).
    pub counts_deliveries: fn(&crate::backend::queue::QueuePlan) -> Result<(), String>,
}

/// Where an engine's evidence of how the queue table was read comes from.
#[derive(Debug)]
pub enum ReadsFrom {
    /// The server counts reads per table; the sampler reads the counters (the text names
    /// them for reports).
    Counters(&'static str),
    /// The server plans every execution again, so a claim probe's plan is the workers' plan.
    ClaimProbes(&'static str),
    /// No plan to read: a broker, or a queue in memory.
    Nothing,
}

/// Every fault kind; an engine lists the ones it runs.
pub const ALL_FAULTS: &[&str] = &[
    "crash_workers",
    "kill_workers",
    "freeze_workers",
    "pause_workers",
    "kill_backends",
    "restart_server",
    "idle_in_transaction",
    "delay_vacuum",
    "active_readers",
    "pool_exhaustion",
    "analyze",
];

impl EngineFacts {
    /// What a scenario on this engine may use, for refusals: "use variant seed or batch and
    /// the faults …".
    pub fn offers(&self) -> String {
        let s = &self.supports;
        let mode = match (s.claim_in_transaction, s.claim_committed) {
            (true, false) => ", claim mode in_transaction",
            (false, true) => ", claim mode committed",
            _ => "",
        };
        format!(
            "use variant {}{mode} and the faults {}",
            or_list(s.variants),
            s.faults.join(", ")
        )
    }
}

/// `a, b or c`.
pub fn or_list(items: &[&str]) -> String {
    joined(items, "or")
}

/// `a, b and c`.
pub fn and_list(items: &[&str]) -> String {
    joined(items, "and")
}

fn joined(items: &[&str], last_word: &str) -> String {
    match items.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} {last_word} {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// A URL scheme: a letter, then letters, digits, `+`, `-` or `.`.
pub fn is_scheme(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
}

/// A server setting of PostgreSQL's vacuum (`autovacuum*`, `vacuum_*`).
pub fn is_vacuum_setting(name: &str) -> bool {
    name.starts_with("autovacuum") || name.starts_with("vacuum_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_references_split_into_name_and_tag() {
        let s = |i: &str| split_image(i);
        assert_eq!(s("postgres:17"), ("postgres".into(), "17".into()));
        assert_eq!(s("postgres"), ("postgres".into(), "latest".into()));
        assert_eq!(
            s("reg:5000/lib/pg:15-x"),
            ("reg:5000/lib/pg".into(), "15-x".into())
        );
        assert_eq!(
            s("reg:5000/lib/pg"),
            ("reg:5000/lib/pg".into(), "latest".into())
        );
    }
}
