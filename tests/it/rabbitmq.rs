//! The broker the article names: the same scenarios, load, faults and proof on a real
//! RabbitMQ (a shared local node; the provider tests and the restart tests start their own).
//! What the proof says is checked against the broker: the jobs' queue empty at the end, the
//! dead letters holding exactly the dead-lettered jobs.

use crate::support::{
    NOT_DRAINED, SMALL, assert_nothing_lost, assert_proof_adds_up, lost_named, prove_again,
    rabbitmq_plan, run_plan, shared_rabbitmq_url,
};
use dbq_bench::backend::{self, Backend};
use dbq_bench::scenario::{DatabasePlan, Engine, ProviderKind};
use lapin::options::BasicGetOptions;
use lapin::options::QueueDeclareOptions;
use lapin::types::FieldTable;
use std::time::Duration;

/// Messages ready in the kept queue's `suffix` queue (`jobs`, `dead`), by the test's own
/// connection.
async fn ready(queue: &dyn Backend, suffix: &str) -> u32 {
    let conn = lapin::Connection::connect(shared_rabbitmq_url(), Default::default())
        .await
        .unwrap();
    let channel = conn.create_channel().await.unwrap();
    let passive = QueueDeclareOptions {
        passive: true,
        ..QueueDeclareOptions::default()
    };
    let name = format!("{}.{suffix}", queue.namespace());
    let q = channel
        .queue_declare(name.as_str().into(), passive, FieldTable::default())
        .await
        .unwrap();
    conn.close(200, "OK".into()).await.ok();
    q.message_count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seed_runs_on_rabbitmq_with_every_job_accounted_for() {
    let p = rabbitmq_plan(
        SMALL,
        &[
            "producers.prefill=300",
            "consumers.handler.error_rate=0.1",
            "producers.poison_fraction=0.02",
        ],
    );
    let (outcome, _dir) = run_plan(&p, true).await;
    let s = &outcome.results.summary;
    assert_nothing_lost(s);
    // The version and the broker's own figures come from its management API.
    assert!(
        s.database.server_version.starts_with("RabbitMQ 3."),
        "{:?}",
        s.database
    );
    let steady = s.db_stats.per_phase.iter().find(|p| p.phase == "steady");
    let figures = &steady.expect("the steady phase's figures").server;
    // The counters, not their rate within the 2 s phase: the broker updates its message
    // statistics once a second and the management API takes them in later still, so on a
    // busy machine a short phase's samples can all see one value (seen in CI: 0/s while
    // 409 acks had been counted).
    assert!(figures["published_total"].max > 0, "{figures:?}");
    assert!(figures["acked_total"].max > 0, "{figures:?}");
    assert!(figures["node_memory_bytes"].max > 0, "{figures:?}");
    assert!(figures.contains_key("unacked"), "{figures:?}");
    assert!(s.jobs.failed_attempts > 0, "{:?}", s.jobs);
    assert!(s.jobs.dead_lettered > 0, "{:?}", s.jobs);
    // The broker keeps no record of acknowledged messages: duplicates are the ledger's.
    assert_eq!(s.accounting.table.duplicate_completions, None);
    let queue = outcome.kept_queue.as_ref().expect("kept");
    assert_eq!(
        ready(&**queue, "jobs").await,
        0,
        "the jobs' queue is drained"
    );
    assert_eq!(
        u64::from(ready(&**queue, "dead").await),
        s.jobs.dead_lettered,
        "the dead letters"
    );
    queue.drop_namespace().await.unwrap();
    backend::release(&**queue);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crashed_and_killed_workers_on_rabbitmq_get_their_jobs_redelivered() {
    // Worker processes are SIGKILLed and their connections closed through the management
    // API: the broker delivers their unacknowledged jobs again by itself, counted as reaps.
    let p = rabbitmq_plan(
        SMALL,
        &[
            "phases.0.duration=4s",
            "consumers.processes=true",
            "producers.rate=80",
            "consumers.handler.duration.fixed=40ms",
            "consumers.restart_after=\"200ms\"",
            "phases.0.faults=[{ kind = \"kill_workers\", every = \"700ms\" }, { kind = \"kill_backends\", target = \"workers\", every = \"900ms\" }]",
        ],
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    assert!(s.faults.worker_crashes > 0, "{:?}", s.faults.events);
    assert!(s.faults.backends_killed > 0, "{:?}", s.faults.events);
    assert!(s.faults.reaped > 0, "redeliveries counted: {:?}", s.faults);
    assert_nothing_lost(s);
    assert!(
        s.accounting.executions.extra_executions > 0,
        "redeliveries counted: {:?}",
        s.accounting.executions
    );
    assert_eq!(s.accounting.executions.unexplained_executions, 0);
}

/// Jobs another client took off the run's queue (`basic.get` with automatic
/// acknowledgement) are gone from the broker: the proof names them lost, and the job still
/// waiting stays unfinished.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_taken_off_the_queue_behind_the_runs_back_on_rabbitmq_are_named_lost() {
    let p = rabbitmq_plan(SMALL, &["phases.0.duration=1s", "producers.rate=20"]);
    let (mut outcome, _dir) = run_plan(&p, true).await;
    assert_nothing_lost(&outcome.results.summary);
    let queue = outcome.kept_queue.clone().expect("kept");
    let ids = crate::support::enqueue_beside(&*queue, &mut outcome.ledger, 3).await;
    let conn = lapin::Connection::connect(shared_rabbitmq_url(), Default::default())
        .await
        .unwrap();
    let channel = conn.create_channel().await.unwrap();
    let jobs = format!("{}.jobs", queue.namespace());
    for _ in 0..2 {
        let got = channel
            .basic_get(jobs.as_str().into(), BasicGetOptions { no_ack: true })
            .await
            .unwrap();
        assert!(got.is_some(), "a message to take");
    }
    conn.close(200, "OK".into()).await.ok();

    let proof = prove_again(&*queue, &outcome.ledger, NOT_DRAINED).await;
    let lost = lost_named(&proof);
    assert_eq!(
        lost,
        vec![(ids[0], "missing"), (ids[1], "missing")],
        "{}",
        proof.verdict
    );
    assert_eq!(proof.unfinished, 1, "{}", proof.verdict);
    assert_proof_adds_up(&proof);
    queue.drop_namespace().await.unwrap();
    backend::release(&*queue);
}

/// A scenario of its own on a local broker, restarted 1 s into the load with a backlog
/// queued: `kind` is the queue's kind, `mode` the shutdown. The backlog is a few hundred
/// jobs, so that one worker drains it within the drain timeout on a machine that gives it a
/// third of a core (with 2,000, a CPU burner left 227 of them queued at the timeout).
fn restart_scenario(kind: &str, mode: &str) -> String {
    format!(
        r#"seed = 7
[database]
engine = "rabbitmq"
[queue]
rabbitmq_queue = "{kind}"
[producers]
count = 1
rate = 50
prefill = 600
[consumers]
count = 1
poll_interval = "20ms"
[consumers.handler]
duration = {{ fixed = "5ms" }}
[drain]
timeout = "30s"
[[phases]]
name = "steady"
duration = "4s"
faults = [{{ kind = "restart_server", after = "1s", down_for = "200ms", mode = "{mode}" }}]
"#
    )
}

/// Runs `text` with `--db local`; the exit code and summary.json.
fn run_local(text: &str) -> (Option<i32>, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("restart.toml");
    std::fs::write(&scenario, text).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args([
            "run",
            scenario.to_str().unwrap(),
            "--db",
            "local",
            "--quiet",
        ])
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    let summary = std::fs::read(dir.path().join("out/summary.json"))
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), serde_json::from_slice(&summary).unwrap())
}

#[test]
fn jobs_in_a_transient_queue_lost_in_a_restart_are_reported_lost() {
    crate::support::require_rabbitmq_binaries();
    let (code, summary) = run_local(
        &restart_scenario("transient", "fast").replace("timeout = \"30s\"", "timeout = \"3s\""),
    );
    let verdict = &summary["accounting"]["verdict"];
    assert_eq!(code, Some(1), "{verdict}");
    assert!(summary["jobs"]["lost"].as_u64().unwrap() > 0, "{verdict}");
    assert!(
        verdict.as_str().unwrap().contains("table missing"),
        "{verdict}"
    );
}

#[test]
fn a_quorum_queue_killed_and_restarted_loses_nothing_and_repeats_nothing() {
    crate::support::require_rabbitmq_binaries();
    let (code, summary) = run_local(&restart_scenario("quorum", "immediate"));
    let verdict = &summary["accounting"]["verdict"];
    assert_eq!(code, Some(0), "{verdict}");
    assert_eq!(summary["jobs"]["lost"], 0, "{verdict}");
    assert_eq!(
        summary["faults"]["server_restarts"], 1,
        "{}",
        summary["faults"]
    );
    // Completions are acknowledgements committed in a transaction: none is delivered again.
    assert_eq!(summary["jobs"]["duplicate_completions"], 0, "{verdict}");
}

/// Jobs waiting out a failure's back-off in a retry queue when the server crashes come back:
/// beside a quorum queue the retry queues are quorum queues that dead-letter at least once
/// (classic ones, dead-lettering at most once, lost such jobs in a crash-restart).
#[test]
fn jobs_waiting_to_be_retried_when_a_quorum_queues_server_crashes_are_not_lost() {
    crate::support::require_rabbitmq_binaries();
    let text = restart_scenario("quorum", "immediate")
        .replace("[producers]", "[queue.backoff]\nbase = \"2s\"\n[producers]")
        .replace("[drain]", "error_rate = 0.5\n[drain]");
    let (code, summary) = run_local(&text);
    let verdict = &summary["accounting"]["verdict"];
    assert!(
        summary["jobs"]["failed_attempts"].as_u64().unwrap() > 100,
        "{}",
        summary["jobs"]
    );
    assert_eq!(
        summary["faults"]["server_restarts"], 1,
        "{}",
        summary["faults"]
    );
    assert_eq!(summary["jobs"]["lost"], 0, "{verdict}");
    assert_eq!(code, Some(0), "{verdict}");
}

fn rabbitmq_db_plan(provider: ProviderKind, image: String) -> DatabasePlan {
    DatabasePlan {
        engine: Engine::Rabbitmq,
        provider,
        image,
        version: None,
        url: None,
        startup_timeout: Duration::from_secs(90),
        settings: vec![("vm_memory_high_watermark".into(), "0.6".into())],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_rabbitmq_provider_starts_serves_and_tears_down() {
    crate::support::require_rabbitmq_binaries();
    crate::support::broker_serves_and_tears_down(
        rabbitmq_db_plan(ProviderKind::Local, String::new()),
        &rabbitmq_plan(SMALL, &[]),
        "RabbitMQ 3.",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rabbitmq_container_provider_starts_serves_and_tears_down() {
    let image = crate::support::require_rabbitmq_image();
    crate::support::broker_serves_and_tears_down(
        rabbitmq_db_plan(ProviderKind::Container, image),
        &rabbitmq_plan(SMALL, &[]),
        "RabbitMQ 3.",
    )
    .await;
}

#[test]
fn rabbitmq_refuses_what_it_cannot_do_in_one_line() {
    let validate = |set: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
            .args(["validate", "scenarios/smoke.toml", "--set"])
            .args(["database.engine=\"rabbitmq\"", "--set", set])
            .output()
            .unwrap()
    };
    let cases = [
        ("queue.variant=\"delete\"", "queue.variant"),
        ("consumers.claim_mode=\"committed\"", "consumers.claim_mode"),
        (
            "phases.0.faults=[{ kind = \"pool_exhaustion\" }]",
            "pool_exhaustion",
        ),
        ("queue.rabbitmq_queue=\"fast\"", "queue.rabbitmq_queue"),
    ];
    for (set, expected) in cases {
        crate::support::assert_bad_input(&validate(set), set, expected);
    }
    // The kind of queue is RabbitMQ's alone.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args(["validate", "scenarios/smoke.toml", "--set"])
        .arg("queue.rabbitmq_queue=\"classic\"")
        .output()
        .unwrap();
    crate::support::assert_bad_input(&out, "rabbitmq_queue on postgres", "on RabbitMQ only");
    assert!(
        validate("queue.rabbitmq_queue=\"classic\"")
            .status
            .success()
    );
    // A classic queue does not count deliveries: counting lost runs as attempts is refused.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args(["validate", "scenarios/smoke.toml"])
        .args(["--set", "database.engine=\"rabbitmq\""])
        .args(["--set", "queue.rabbitmq_queue=\"classic\""])
        .args(["--set", "reaper.count_as_attempt=true"])
        .output()
        .unwrap();
    crate::support::assert_bad_input(
        &out,
        "count_as_attempt on classic",
        "reaper.count_as_attempt",
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("x-delivery-count"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
