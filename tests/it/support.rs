//! Test support: the shared server and helpers to build and run plans against it.
//!
//! The server is `DBQ_TEST_DATABASE_URL` when set; otherwise one throwaway local cluster
//! (made by the crate's own `local` provider, fsync off) is started on first use and
//! stopped when the test process exits.
//!
//! A missing prerequisite (server binaries, the container image, Python's `hdrhistogram`)
//! fails its tests with one message that says what is missing and how to get it;
//! `scripts/test` installs all of them.

use dbq_bench::backend::{self, Backend, Ports};
use dbq_bench::error::Failure;
use dbq_bench::provider::local::{self, LocalCluster};
use dbq_bench::run::{RunOptions, RunOutcome, run};
use dbq_bench::scenario::load::{Overrides, parse};
use dbq_bench::scenario::{Engine, EnvDefaults, Plan, ProviderKind};
use sqlx::mysql::MySqlConnection;
use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{AssertSqlSafe, ConnectOptions, Connection};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Each engine's shared server, by its place in the registry (room for more engines).
static SHARED: [OnceLock<String>; 16] = [const { OnceLock::new() }; 16];
static CLUSTERS: Mutex<Vec<LocalCluster>> = Mutex::new(Vec::new());

extern "C" fn stop_clusters() {
    if let Ok(mut guard) = CLUSTERS.lock() {
        for mut cluster in guard.drain(..) {
            cluster.stop();
        }
    }
}

/// `run scenarios/smoke.toml` on the shared server: the start of most CLI tests' flags.
pub fn smoke_on_shared_server() -> Vec<&'static str> {
    vec![
        "run",
        "scenarios/smoke.toml",
        "--db",
        "url",
        "--database-url",
        shared_url(),
    ]
}

/// URL of the Postgres server shared by the tests (see [`shared_server`]).
pub fn shared_url() -> &'static str {
    shared_server(Engine::Postgres)
}

/// URL of a PostgreSQL server of the calling test's own (a local cluster, fsync off, kept
/// until the test process exits), for a test whose workers' plans must last: on the shared
/// server the other tests' DDL can make every session plan again (a backend that falls
/// behind the server's invalidation queue drops its cached plans). With
/// `DBQ_TEST_DATABASE_URL` set, that server.
pub fn private_postgres_url() -> String {
    if let Ok(url) = std::env::var("DBQ_TEST_DATABASE_URL") {
        return url;
    }
    require_local_binaries();
    let port = start_shared(Engine::Postgres, &[("fsync", "off")]);
    format!("postgres://postgres@127.0.0.1:{port}/postgres")
}

/// URL of the Mariadb server shared by the tests (see [`shared_server`]).
pub fn shared_mariadb_url() -> &'static str {
    shared_server(Engine::Mariadb)
}

/// URL of the Redis server shared by the tests (see [`shared_server`]).
pub fn shared_redis_url() -> &'static str {
    shared_server(Engine::Redis)
}

/// URL of the Rabbitmq server shared by the tests (see [`shared_server`]).
pub fn shared_rabbitmq_url() -> &'static str {
    shared_server(Engine::Rabbitmq)
}

/// URL of the Kafka server shared by the tests (see [`shared_server`]).
pub fn shared_kafka_url() -> &'static str {
    shared_server(Engine::Kafka)
}

/// A plan from scenario text on the shared Kafka-API broker.
pub fn kafka_plan(text: &str, sets: &[&str]) -> Plan {
    let mut sets = sets.to_vec();
    sets.push("database.engine=\"kafka\"");
    build_plan(text, &sets, ProviderKind::Url, Some(shared_kafka_url()))
}

/// A plan from scenario text on the shared RabbitMQ broker.
pub fn rabbitmq_plan(text: &str, sets: &[&str]) -> Plan {
    let mut sets = sets.to_vec();
    sets.push("database.engine=\"rabbitmq\"");
    build_plan(text, &sets, ProviderKind::Url, Some(shared_rabbitmq_url()))
}

/// A plan from scenario text on the shared Redis server.
pub fn redis_plan(text: &str, sets: &[&str]) -> Plan {
    let mut sets = sets.to_vec();
    sets.push("database.engine=\"redis\"");
    build_plan(text, &sets, ProviderKind::Url, Some(shared_redis_url()))
}

/// Starts a local server of `engine` kept until the test process exits; returns its port.
fn start_shared(engine: Engine, settings: &[(&str, &str)]) -> u16 {
    start_shared_ports(engine, settings).main
}

/// Starts the shared server of `engine`: the ports it serves on.
fn start_shared_ports(engine: Engine, settings: &[(&str, &str)]) -> Ports {
    let settings: Vec<(String, String)> = settings
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    // Started on a runtime of its own: the calling test's runtime may be single-threaded.
    let cluster = std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        rt.block_on(async {
            let driver = backend::driver(engine);
            let (cluster, _) = local::start(driver, None, &settings, Duration::from_secs(60))
                .await
                .unwrap_or_else(|e| {
                    let own = engine
                        .facts()
                        .install
                        .as_ref()
                        .map(|i| i.test_server.variable);
                    panic!(
                        "starting the shared {} test server (set {} to use your own): {e:#}",
                        engine.label(),
                        own.unwrap_or("a URL")
                    )
                });
            cluster
        })
    })
    .join()
    .expect("shared server thread");
    let ports = cluster.ports;
    let mut clusters = CLUSTERS.lock().unwrap();
    if clusters.is_empty() {
        // SAFETY: registers a plain function with no arguments; it only locks a static mutex.
        unsafe {
            nix::libc::atexit(stop_clusters);
        }
    }
    clusters.push(cluster);
    ports
}

/// How to get every prerequisite at once.
const SET_UP_ALL: &str = "`scripts/test` installs every prerequisite and runs the suite";

/// The PostgreSQL server binaries (the shared test server and the `local` provider).
pub fn require_local_binaries() {
    require_binaries(Engine::Postgres);
}

/// MariaDB's server binaries (the shared MariaDB test server and the `local` provider).
pub fn require_mariadb_binaries() {
    require_binaries(Engine::Mariadb);
}

/// Redis's server binary (the shared Redis test server and the `local` provider).
pub fn require_redis_binaries() {
    require_binaries(Engine::Redis);
}

/// RabbitMQ from the machine's packages (the shared broker and the `local` provider).
pub fn require_rabbitmq_binaries() {
    require_binaries(Engine::Rabbitmq);
}

/// The server of `engine` installed on this machine, as its folder's facts name them (or
/// the facts' test variable naming a server of the tester's own instead).
fn require_binaries(engine: Engine) {
    let servers = backend::driver(engine)
        .servers()
        .expect("an engine whose servers the harness starts");
    if let Err(e) = servers.local().binaries() {
        let facts = engine.facts();
        let install = facts.install.as_ref().expect("an engine with servers");
        panic!(
            "missing prerequisite: {} on this machine ({e:#}). Install it \
             (`{}`) or set {} to a server of yours; {SET_UP_ALL}",
            facts.label, install.local_install, install.test_server.variable
        );
    }
}

/// The RabbitMQ image the container tests start (DBQ_RABBITMQ_IMAGE, else the official
/// default); see [`require_engine_image`].
pub fn require_rabbitmq_image() -> String {
    require_engine_image(Engine::Rabbitmq)
}

/// The Kafka-API broker image the container tests start (DBQ_KAFKA_IMAGE, else the one
/// docker/build-kafka-image.sh builds); see [`require_engine_image`].
pub fn require_kafka_image() -> String {
    require_engine_image(Engine::Kafka)
}

/// Tansu, the Kafka-API broker the local provider runs (scripts/install-tansu).
pub fn require_kafka_binaries() {
    require_binaries(Engine::Kafka);
}

/// The Redis image the container tests start (DBQ_REDIS_IMAGE, else the official default);
/// see [`require_engine_image`].
pub fn require_redis_image() -> String {
    require_engine_image(Engine::Redis)
}

/// The PostgreSQL image the container tests start (DBQ_POSTGRES_IMAGE, else the official
/// default); see [`require_engine_image`].
pub fn require_image() -> String {
    require_engine_image(Engine::Postgres)
}

/// The MariaDB image the container tests start (DBQ_MARIADB_IMAGE, else the official
/// default); see [`require_engine_image`].
pub fn require_mariadb_image() -> String {
    require_engine_image(Engine::Mariadb)
}

/// The image of `engine` the container tests start; fails unless a Docker engine answers
/// and has it or can pull it.
fn require_engine_image(engine: Engine) -> String {
    require_present(engine, test_image(engine), "")
}

/// The image of `engine` at `version` that `database.version` names: the container tests'
/// image tagged by version; fails unless it is here or can be pulled (`scripts/test` builds
/// every version the engine's script builds).
pub fn require_version_image(engine: Engine, version: &str) -> String {
    let (name, _) = dbq_bench::backend::engine::split_image(&test_image(engine));
    require_present(engine, format!("{name}:{version}"), version)
}

/// The container tests' image of `engine`: its DBQ_…_IMAGE, else the official one.
fn test_image(engine: Engine) -> String {
    let facts = engine
        .facts()
        .install
        .as_ref()
        .expect("an engine with an image");
    std::env::var(facts.variable).unwrap_or_else(|_| facts.image.into())
}

fn require_present(engine: Engine, image: String, version: &str) -> String {
    let facts = engine
        .facts()
        .install
        .as_ref()
        .expect("an engine with an image");
    let var = facts.variable;
    let check = image.clone();
    let available = std::thread::spawn(move || {
        tokio::runtime::Runtime::new()
            .expect("runtime")
            .block_on(dbq_bench::provider::check_available(&check))
    })
    .join()
    .expect("image check thread");
    if let Err(e) = available {
        let (script, built) = (facts.build_script, facts.built_tag);
        panic!(
            "missing prerequisite: the container image {image} ({e:#}). Pull it, or where no \
             registry is reachable build one with `{script} {version}` and set {var}={built}; {SET_UP_ALL}"
        );
    }
    image
}

/// A Python interpreter with HdrHistogram's Python implementation (`DBQ_PYTHON`, else
/// `python3`), the independent reader of `latency.hlog`.
pub fn require_python_hdrh() -> String {
    let python = std::env::var("DBQ_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = std::process::Command::new(&python)
        .args(["-c", "import hdrh.log"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        panic!(
            "missing prerequisite: {python} with the `hdrhistogram` package (`pip install \
             hdrhistogram`, or set DBQ_PYTHON to an interpreter that has it); {SET_UP_ALL}"
        );
    }
    python
}

/// A plan from scenario text, run with the url provider against the shared server.
pub fn plan(text: &str, sets: &[&str]) -> Plan {
    build_plan(text, sets, ProviderKind::Url, Some(shared_url()))
}

/// A plan from scenario text, run with the url provider against `url`.
pub fn plan_on(url: &str, text: &str, sets: &[&str]) -> Plan {
    build_plan(text, sets, ProviderKind::Url, Some(url))
}

/// A fresh database named `name` on the shared PostgreSQL server, for a test that must not
/// see the other tests' sessions (VACUUM's xmin horizon is kept per database); returns its
/// URL. Drop it with [`drop_database`].
pub async fn database_of_its_own(name: &str) -> String {
    let mut admin = PgConnection::connect(shared_url()).await.unwrap();
    drop_database_on(&mut admin, name).await;
    sqlx::raw_sql(AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut admin)
        .await
        .unwrap();
    admin.close().await.ok();
    let options: PgConnectOptions = shared_url().parse().unwrap();
    options.database(name).to_url_lossy().to_string()
}

pub async fn drop_database(name: &str) {
    let mut admin = PgConnection::connect(shared_url()).await.unwrap();
    drop_database_on(&mut admin, name).await;
    admin.close().await.ok();
}

async fn drop_database_on(admin: &mut PgConnection, name: &str) {
    sqlx::raw_sql(AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
    )))
    .execute(admin)
    .await
    .unwrap();
}

/// A plan from scenario text on MariaDB, run with the url provider against the shared
/// MariaDB server.
pub fn mariadb_plan(text: &str, sets: &[&str]) -> Plan {
    let mut sets = sets.to_vec();
    sets.push("database.engine=\"mariadb\"");
    build_plan(text, &sets, ProviderKind::Url, Some(shared_mariadb_url()))
}

/// A plan from scenario text on a server of its own (the local provider), for faults that
/// need a server the run started.
pub fn local_plan(text: &str, sets: &[&str]) -> Plan {
    build_plan(text, sets, ProviderKind::Local, None)
}

fn build_plan(text: &str, sets: &[&str], provider: ProviderKind, url: Option<&str>) -> Plan {
    let overrides = Overrides {
        sets: sets.iter().map(|s| s.to_string()).collect(),
        provider: Some(provider),
        database_url: url.map(str::to_string),
        ..Default::default()
    };
    let scenario = parse("test.toml", text, &overrides).expect("test scenario parses");
    Plan::build(scenario, "test.toml", "test", &EnvDefaults::default())
        .expect("test scenario is valid")
}

/// A run with one `restart_server` fault after 2 s of a 6 s phase: the restart happened,
/// the fleets felt it, and work went on after it.
pub fn assert_restart_survived(outcome: &RunOutcome) {
    let s = &outcome.results.summary;
    assert_eq!(s.faults.server_restarts, 1, "{:?}", s.faults.events);
    assert!(
        s.jobs.worker_errors + s.jobs.enqueue_errors > 0,
        "the restart was felt"
    );
    assert!(
        outcome
            .results
            .timeline
            .iter()
            .any(|r| r.second > 4 && r.completed > 0),
        "work went on after the restart"
    );
}

/// Runs a plan into a temporary results directory.
pub async fn run_plan(plan: &Plan, keep: bool) -> (RunOutcome, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let opts = RunOptions {
        out_dir: Some(dir.path().to_path_buf()),
        keep,
        worker_exe: Some(env!("CARGO_BIN_EXE_dbq-bench").into()),
        ..RunOptions::default()
    };
    match run(plan, &opts, CancellationToken::new()).await {
        Ok(o) => (o, dir),
        Err(Failure::Run(e)) => panic!("run failed: {e:#}"),
        Err(e) => panic!("run failed: {e}"),
    }
}

/// A small scenario: one measured phase, short poll interval, quick backoff.
pub const SMALL: &str = r#"
seed = 7
[queue]
backoff = { base = "10ms" }
[producers]
count = 2
rate = 200
[consumers]
count = 4
poll_interval = "20ms"
[consumers.handler]
duration = { fixed = "1ms" }
[drain]
timeout = "30s"
[[phases]]
name = "steady"
duration = "2s"
"#;

/// Runs `dbq-bench` with `args`, waits for a stderr line containing `marker`, lets it run
/// `after`, then sends SIGINT (Ctrl-C) and returns its exit status.
pub fn interrupt_when(args: &[&str], marker: &str, after: Duration) -> std::process::ExitStatus {
    interrupt(args, marker, after, None).0
}

/// As [`interrupt_when`]; also everything it printed on stderr.
pub fn interrupt_saying(
    args: &[&str],
    marker: &str,
    after: Duration,
) -> (std::process::ExitStatus, String) {
    interrupt(args, marker, after, None)
}

/// As [`interrupt_when`], then SIGINT again `between` later (Ctrl-C again while it tears
/// down); returns its exit status and everything it printed on stderr.
pub fn interrupt_twice_when(
    args: &[&str],
    marker: &str,
    after: Duration,
    between: Duration,
) -> (std::process::ExitStatus, String) {
    interrupt(args, marker, after, Some(between))
}

fn interrupt(
    args: &[&str],
    marker: &str,
    after: Duration,
    again: Option<Duration>,
) -> (std::process::ExitStatus, String) {
    use std::io::{BufRead, BufReader, Read};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    while !said.contains(marker) {
        assert!(
            stderr.read_line(&mut said).unwrap() > 0,
            "dbq-bench exited before printing {marker:?}: {said}"
        );
    }
    std::thread::sleep(after);
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    if let Some(between) = again {
        std::thread::sleep(between);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    }
    stderr.read_to_string(&mut said).unwrap();
    (child.wait().unwrap(), said)
}

/// Processes whose command line mentions `text` (e.g. a server's data directory).
pub fn processes_mentioning(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(text) {
            found.push(format!(
                "{}: {cmdline}",
                entry.file_name().to_string_lossy()
            ));
        }
    }
    found
}

/// A command's exit status, stdout and stderr in one text, for assertion messages.
pub fn said(o: &std::process::Output) -> String {
    format!(
        "exit {:?}\n{}\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The command exited with `code`; its stdout, for the checks that follow.
pub fn stdout_of(o: &std::process::Output, code: i32) -> String {
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(
        o.status.code(),
        Some(code),
        "{stdout}\nstderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    stdout
}

/// Bad input: exit 2 and one line on stderr that contains `expected`.
pub fn assert_bad_input(o: &std::process::Output, what: &str, expected: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{what}: expected exit 2; stderr: {err}"
    );
    assert_eq!(err.lines().count(), 1, "{what}: one line expected: {err}");
    assert!(
        err.contains(expected),
        "{what}: expected {expected:?} in: {err}"
    );
}

/// The proof of a drained in-transaction run with the completion audit, as the accounting
/// and variant tests run it again on a kept schema.
pub const DRAINED_AUDITED: dbq_bench::accounting::ProofOptions =
    dbq_bench::accounting::ProofOptions {
        audit: true,
        drained: true,
        outbox: false,
        reported_by_library: false,
        at_least_once: false,
    };

/// The proof of a queue looked at before it drained (after a test's own change to it), with
/// no audit.
pub const NOT_DRAINED: dbq_bench::accounting::ProofOptions = dbq_bench::accounting::ProofOptions {
    audit: false,
    drained: false,
    outbox: false,
    reported_by_library: false,
    at_least_once: false,
};

/// The jobs a proof names lost, each with what the queue said of it.
pub fn lost_named(proof: &dbq_bench::accounting::AccountingProof) -> Vec<(i64, &str)> {
    proof
        .lost
        .iter()
        .map(|p| (p.id, p.table.as_str()))
        .collect()
}

/// Every committed job is in exactly one of the proof's places.
pub fn assert_proof_adds_up(proof: &dbq_bench::accounting::AccountingProof) {
    assert_eq!(
        proof.done
            + proof.dead_lettered
            + proof.unfinished
            + proof.lost_total
            + proof.unrecorded_success_count,
        proof.committed,
        "committed = done + dead-lettered + unfinished + lost + unrecorded successes: {proof:?}"
    );
}

/// URL of the server of `engine` shared by the tests, as its facts say: a server of the
/// tester's own (the facts' test variable, e.g. `DBQ_TEST_DATABASE_URL`), else a local one
/// started once with the facts' test settings; `<scheme>://` for an engine without servers
/// (the in-memory queue).
pub fn shared_server(engine: Engine) -> &'static str {
    let place = Engine::ALL.iter().position(|e| *e == engine).unwrap();
    SHARED[place].get_or_init(|| {
        let facts = engine.facts();
        let Some(install) = &facts.install else {
            return format!("{}://", facts.schemes[0]);
        };
        let t = &install.test_server;
        if let Ok(url) = std::env::var(t.variable) {
            return url;
        }
        require_binaries(engine);
        let ports = start_shared_ports(engine, t.settings);
        (t.url)(ports.main, ports.admin)
    })
}

/// A queue of `plan`'s design installed in a namespace of its own on the shared server of
/// `engine`, with the completion audit when `audit`; drop it with `drop_namespace`.
pub async fn fresh_queue(engine: Engine, plan: &Plan, audit: bool) -> Arc<dyn Backend> {
    let url = shared_server(engine);
    let endpoint = backend::driver(engine).endpoint(url, &[]).unwrap();
    backend::install(&*endpoint, "dbq_test", &plan.queue, audit)
        .await
        .unwrap()
}

/// A connection of the test's own to a PostgreSQL queue's namespace, for its own SQL.
pub async fn sql(queue: &dyn Backend) -> PgConnection {
    let at = queue.attachment().expect("a queue on a server");
    PgConnection::connect(&at.url).await.unwrap()
}

/// The same on MariaDB.
pub async fn maria_sql(queue: &dyn Backend) -> MySqlConnection {
    let at = queue.attachment().expect("a queue on a server");
    MySqlConnection::connect(&at.url).await.unwrap()
}

/// Runs the accounting proof again on a finished run's ledger (a single step: no earlier
/// steps' jobs on the queue).
pub async fn prove_again(
    queue: &dyn Backend,
    ledger: &dbq_bench::metrics::Ledger,
    options: dbq_bench::accounting::ProofOptions,
) -> dbq_bench::accounting::AccountingProof {
    let mut link = queue.connect("test").await.unwrap();
    let mut prove = async || {
        dbq_bench::accounting::prove(
            &mut *link,
            &mut ledger.clone(),
            options,
            &Default::default(),
        )
        .await
        .unwrap()
    };
    let first = prove().await;
    // Again on the same connection, whose statements are now prepared: a statement that
    // answers differently when executed again (a server's prepared-statement bug) shows.
    let second = prove().await;
    assert_eq!(
        first.verdict, second.verdict,
        "the proof, run twice on one connection, must agree with itself"
    );
    link.close().await;
    second
}

/// A run's bystander at `rate` statements/s, measured alone for `quiet_s`: both
/// measurements took about the statements the schedule set, none failed, and each phase
/// has its own percentiles.
pub fn assert_bystander(s: &dbq_bench::report::Summary, rate: f64, quiet_s: f64) {
    let b = s.bystander.as_ref().expect("a bystander section");
    let quiet = b.quiet.expect("measured alone");
    let expected = rate * quiet_s;
    assert!(
        (0.8 * expected..=1.05 * expected).contains(&(quiet.count as f64)),
        "{b:?}"
    );
    let expected = rate * s.throughput.window_s;
    assert!(
        (0.8 * expected..=1.05 * expected).contains(&(b.under_load.count as f64)),
        "{b:?}, window {} s",
        s.throughput.window_s
    );
    assert_eq!(b.errors, 0, "{b:?}");
    assert!(b.added_p99_ms.is_some(), "{b:?}");
    for p in s.phases.iter().filter(|p| p.measured) {
        assert!(p.latency_ms.bystander.count > 0, "{p:?}");
    }
}

/// A run's jobs all accounted for: some completed, none lost, the proof sound and both
/// views in agreement.
pub fn assert_nothing_lost(s: &dbq_bench::report::Summary) {
    assert!(s.jobs.completed > 0, "{:?}", s.jobs);
    assert_eq!(s.jobs.lost, 0, "the proof says: {}", s.accounting.verdict);
    assert!(s.accounting.ok, "the proof says: {}", s.accounting.verdict);
    assert!(s.accounting.views_agree, "{}", s.accounting.verdict);
    assert_counts_add_up(s);
}

/// Every enqueued job is in exactly one place: done, dead-lettered, unfinished or lost.
pub fn assert_counts_add_up(s: &dbq_bench::report::Summary) {
    let j = &s.jobs;
    assert_eq!(
        j.done + j.dead_lettered + j.unfinished + j.lost + j.unrecorded_successes,
        j.enqueued,
        "enqueued = done + dead-lettered + unfinished + lost + unrecorded successes: {j:?}; the proof says: {}",
        s.accounting.verdict
    );
}

/// A broker's provider starts a server whose version starts with `version`, a queue of
/// `queue`'s design is installed, read and dropped in it, and the server is torn down.
pub async fn broker_serves_and_tears_down(
    plan: dbq_bench::scenario::DatabasePlan,
    queue: &Plan,
    version: &str,
) {
    let server = dbq_bench::provider::provision(&plan)
        .await
        .expect("provider");
    assert!(server.version.starts_with(version), "{}", server.version);
    let installed = backend::install(&*server.endpoint(), "dbq_test", &queue.queue, false)
        .await
        .unwrap();
    let mut link = installed.connect("test").await.unwrap();
    assert_eq!(
        link.status_counts().await.unwrap()[0],
        ("pending".into(), 0)
    );
    link.close().await;
    installed.drop_namespace().await.unwrap();
    backend::release(&*installed);
    let endpoint = server.endpoint();
    server.teardown().await.unwrap();
    assert!(endpoint.ping().await.is_err(), "the server still answers");
}

/// The path of one of the repository's example directories under `scenarios/`.
pub fn scenario_dir(name: &str) -> String {
    format!("{}/scenarios/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// A copy of the directory `src` in a directory of its own, to change or to write results
/// into without touching the repository.
pub fn copy_of(src: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.path().join(path.file_name().unwrap())).unwrap();
    }
    dir
}

/// `dbq-bench <args> --quiet --out DIR` running in the background, what it says on stderr
/// kept in a file: for tests that disrupt a run (or kill it) once its journal has filled.
pub struct Background {
    pub child: std::process::Child,
    said: tempfile::NamedTempFile,
    journal: std::path::PathBuf,
}

impl Background {
    pub fn start(args: &[&str], out: &std::path::Path) -> Background {
        let said = tempfile::NamedTempFile::new().unwrap();
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
            .args(args)
            .args(["--quiet", "--out"])
            .arg(out)
            .stdout(std::process::Stdio::null())
            .stderr(said.reopen().unwrap())
            .spawn()
            .unwrap();
        let journal = out.join("journal.jsonl");
        Background {
            child,
            said,
            journal,
        }
    }

    /// Its journal's text once it holds `lines` lines (within 2 minutes); a run that ends
    /// first fails the test with what it said.
    pub fn journal_of(&mut self, lines: usize) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        loop {
            let text = std::fs::read_to_string(&self.journal).unwrap_or_default();
            if text.lines().count() >= lines {
                return text;
            }
            if let Some(ended) = self.child.try_wait().unwrap() {
                panic!(
                    "the run ended ({ended}) before its journal held {lines} lines; it said, last first: {:#?}",
                    self.said_last()
                );
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no journal of {lines} lines"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Its exit status, waiting up to `within`; past it the run is killed and the test fails.
    pub fn ended_within(&mut self, within: Duration) -> std::process::ExitStatus {
        let deadline = std::time::Instant::now() + within;
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            if std::time::Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "the run did not end within {within:?}; it said, last first: {:#?}",
                    self.said_last()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Its last 20 lines on stderr, last first.
    pub fn said_last(&self) -> Vec<String> {
        let said = std::fs::read_to_string(self.said.path()).unwrap_or_default();
        said.lines().rev().take(20).map(str::to_string).collect()
    }
}

/// Enqueues `n` jobs on a queue a run kept, as one more producer the run's ledger hears of:
/// their ids.
pub async fn enqueue_beside(
    queue: &dyn Backend,
    ledger: &mut dbq_bench::metrics::Ledger,
    n: usize,
) -> Vec<i64> {
    let mut link = queue.connect("test").await.unwrap();
    let job = dbq_bench::backend::NewJob {
        job_type: "email".into(),
        payload: "{}".into(),
        priority: 0,
    };
    let mut ids = Vec::new();
    for _ in 0..n {
        let id = link.enqueue(&job).await.unwrap();
        ledger.enqueued(id);
        ids.push(id);
    }
    link.close().await;
    ids
}

/// Copies the files (not the directories) of `from` into `to`, made.
pub fn copy_files(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, to.join(path.file_name().unwrap())).unwrap();
        }
    }
}
