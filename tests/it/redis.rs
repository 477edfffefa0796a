//! The first broker: the same scenarios, load, faults and proof on a real Redis (a shared
//! local server; the provider tests and the loss test start their own). What the proof says
//! is checked against the broker itself: the stream empty of waiting and pending entries,
//! the dead-letter stream holding exactly the dead-lettered jobs.

use crate::support::{
    NOT_DRAINED, SMALL, assert_nothing_lost, assert_proof_adds_up, lost_named, prove_again,
    redis_plan, run_plan, shared_redis_url,
};
use dbq_bench::accounting::ProofOptions;
use dbq_bench::backend::{self, Backend, FailOutcome, NewJob};
use dbq_bench::scenario::{ClaimMode, DatabasePlan, Engine, ProviderKind};
use std::time::Duration;

/// The broker's own counts for a kept queue: (stream entries, pending entries, dead-lettered).
async fn broker_counts(queue: &dyn Backend) -> (i64, i64, i64) {
    let client = redis::Client::open(shared_redis_url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let ns = queue.namespace();
    let stream = format!("{ns}:stream");
    let entries: i64 = redis::cmd("XLEN")
        .arg(&stream)
        .query_async(&mut conn)
        .await
        .unwrap();
    // XPENDING's summary starts with the number of pending entries.
    let pending: Vec<redis::Value> = redis::cmd("XPENDING")
        .arg(&stream)
        .arg("workers")
        .query_async(&mut conn)
        .await
        .unwrap();
    let pending: i64 = redis::from_redis_value(pending[0].clone()).unwrap();
    let dead: i64 = redis::cmd("XLEN")
        .arg(format!("{ns}:dead"))
        .query_async(&mut conn)
        .await
        .unwrap();
    (entries, pending, dead)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seed_runs_on_redis_with_every_job_accounted_for() {
    let p = redis_plan(
        SMALL,
        &[
            "producers.prefill=300",
            "consumers.handler.error_rate=0.1",
            "producers.poison_fraction=0.02",
            "sampler.interval=200ms",
        ],
    );
    let (outcome, _dir) = run_plan(&p, true).await;
    let s = &outcome.results.summary;
    assert_nothing_lost(s);
    assert!(
        s.database.server_version.starts_with("Redis 7"),
        "{:?}",
        s.database
    );
    assert!(s.jobs.failed_attempts > 0, "{:?}", s.jobs);
    assert!(s.jobs.dead_lettered > 0, "{:?}", s.jobs);
    assert_eq!(
        s.accounting.table.duplicate_completions,
        Some(0),
        "the audit ran"
    );
    let steady = s
        .db_stats
        .per_phase
        .iter()
        .find(|p| p.phase == "steady")
        .expect("the load phase was sampled");
    assert!(
        steady.wal_bytes > 0,
        "the append-only file grew: {steady:?}"
    );

    let queue = outcome.kept_queue.as_ref().expect("kept");
    let (entries, pending, dead) = broker_counts(&**queue).await;
    assert_eq!((entries, pending), (0, 0), "the stream is drained");
    assert_eq!(dead as u64, s.jobs.dead_lettered, "the dead-letter stream");
    queue.drop_namespace().await.unwrap();
    backend::release(&**queue);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_claims_on_redis_take_several_entries_per_read() {
    let p = redis_plan(
        SMALL,
        &[
            "queue.variant=\"batch\"",
            "queue.claim_batch=20",
            "producers.prefill=2000",
            "consumers.handler.duration.fixed=0ms",
        ],
    );
    let (outcome, _dir) = run_plan(&p, true).await;
    let s = &outcome.results.summary;
    assert_nothing_lost(s);
    assert_eq!(s.design.claim_batch, 20, "{:?}", s.design);
    // One read takes a whole batch from a backlog: checked on the queue itself, as the
    // run's claim counts depend on how fast the machine drains it.
    let queue = outcome.kept_queue.as_ref().expect("kept");
    let job = NewJob {
        job_type: "batch-check".into(),
        payload: "{}".into(),
        priority: 0,
    };
    let mut producer = queue.connect("test-producer").await.unwrap();
    producer.enqueue_batch(&vec![job; 50]).await.unwrap();
    let mut worker = queue.connect("test-worker").await.unwrap();
    let claimed = worker.claim(ClaimMode::Committed).await.unwrap();
    assert_eq!(claimed.len(), 20, "one read of a 50-entry backlog");
    producer.close().await;
    worker.close().await;
    queue.drop_namespace().await.unwrap();
    backend::release(&**queue);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_workers_and_clients_on_redis_lose_nothing_and_are_reaped() {
    // chaos-crash, shortened: worker processes SIGKILLed and their clients killed
    // (CLIENT KILL); their pending entries come back through XAUTOCLAIM, counted as reaps.
    let p = redis_plan(
        SMALL,
        &[
            "phases.0.duration=4s",
            "consumers.processes=true",
            "producers.rate=80",
            "consumers.handler.duration.fixed=40ms",
            "consumers.restart_after=\"200ms\"",
            "reaper.interval=\"200ms\"",
            "reaper.stale_after=\"500ms\"",
            "phases.0.faults=[{ kind = \"kill_workers\", every = \"700ms\" }, { kind = \"kill_backends\", target = \"workers\", every = \"900ms\" }]",
        ],
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    assert!(s.faults.worker_crashes > 0, "{:?}", s.faults.events);
    assert!(s.faults.backends_killed > 0, "{:?}", s.faults.events);
    assert!(s.faults.reaped > 0, "{:?}", s.faults);
    assert_nothing_lost(s);
    assert!(
        s.faults.duplicates_within_claim_mode,
        "{:?}",
        s.accounting.executions
    );
}

/// Entries another client of the run's consumer group read and acknowledged without running
/// them: two waiting ones, and one a worker of the run held and then failed. The group will
/// never hand them out again, so the proof names them lost, never "still queued"; a job
/// still waiting stays unfinished, and the counts add up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_acknowledged_outside_the_run_on_redis_are_named_lost() {
    let p = redis_plan(SMALL, &["phases.0.duration=1s", "producers.rate=20"]);
    let (mut outcome, _dir) = run_plan(&p, true).await;
    assert_nothing_lost(&outcome.results.summary);
    let queue = outcome.kept_queue.clone().expect("kept");
    let mut link = queue.connect("test").await.unwrap();
    let job = NewJob {
        job_type: "email".into(),
        payload: "{}".into(),
        priority: 0,
    };
    let mut ids = Vec::new();
    for _ in 0..4 {
        let id = link.enqueue(&job).await.unwrap();
        outcome.ledger.enqueued(id);
        ids.push(id);
    }
    // The run's worker takes the first.
    let held = link.claim(ClaimMode::Committed).await.unwrap();
    assert_eq!(held.iter().map(|j| j.id).collect::<Vec<_>>(), vec![ids[0]]);
    outcome.ledger.claimed(ids[0], None);

    // The intruder reads the next two in the run's group and acknowledges all three.
    let client = redis::Client::open(shared_redis_url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let stream = format!("{}:stream", queue.namespace());
    let read: redis::Value = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg("workers")
        .arg("intruder")
        .arg("COUNT")
        .arg(2)
        .arg("STREAMS")
        .arg(&stream)
        .arg(">")
        .query_async(&mut conn)
        .await
        .unwrap();
    let pending: Vec<(String, String, u64, u64)> = redis::cmd("XPENDING")
        .arg(&stream)
        .arg("workers")
        .arg("-")
        .arg("+")
        .arg(10)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(pending.len(), 3, "{pending:?} {read:?}");
    for (entry, ..) in &pending {
        let _: i64 = redis::cmd("XACK")
            .arg(&stream)
            .arg("workers")
            .arg(entry)
            .query_async(&mut conn)
            .await
            .unwrap();
    }
    // The worker's failure finds its entry acknowledged: no longer its own.
    let failed = link.fail(ids[0], "boom").await.unwrap();
    assert_eq!(failed, FailOutcome::Stale);
    outcome.ledger.stale(ids[0]);
    link.close().await;

    let audited = ProofOptions {
        audit: true,
        ..NOT_DRAINED
    };
    let proof = prove_again(&*queue, &outcome.ledger, audited).await;
    let lost = lost_named(&proof);
    let stranded = "acknowledged outside the run, never delivered again";
    assert_eq!(
        lost,
        vec![(ids[0], stranded), (ids[1], stranded), (ids[2], stranded)],
        "{}",
        proof.verdict
    );
    assert_eq!(proof.unfinished, 1, "{}", proof.verdict);
    assert_proof_adds_up(&proof);
    assert!(
        proof.verdict.contains(&format!("id {}", ids[1])),
        "{}",
        proof.verdict
    );
    queue.drop_namespace().await.unwrap();
    backend::release(&*queue);
}

/// A Redis that keeps nothing on disk (`appendonly no`, `save ""`), restarted mid-run: the
/// jobs it held are gone, and the run must say so and exit 1.
#[test]
fn jobs_a_redis_without_persistence_loses_in_a_restart_are_reported_lost() {
    crate::support::require_redis_binaries();
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("forgetful.toml");
    let text = format!(
        "{SMALL}\n[database]\nengine = \"redis\"\nsettings = {{ appendonly = \"no\" }}\n"
    )
    .replace("[drain]\ntimeout = \"30s\"", "[drain]\ntimeout = \"2s\"")
    .replace(
        "duration = \"2s\"\n",
        "duration = \"4s\"\nfaults = [{ kind = \"restart_server\", after = \"2s\", down_for = \"500ms\" }]\n",
    );
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
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("out/summary.json")).unwrap())
            .unwrap();
    let lost = summary["jobs"]["lost"].as_u64().unwrap();
    assert!(lost > 0, "{}", summary["accounting"]["verdict"]);
    assert!(
        summary["accounting"]["verdict"]
            .as_str()
            .unwrap()
            .contains("table missing"),
        "{}",
        summary["accounting"]["verdict"]
    );
}

fn redis_db_plan(provider: ProviderKind, image: String) -> DatabasePlan {
    DatabasePlan {
        engine: Engine::Redis,
        provider,
        image,
        version: None,
        url: None,
        startup_timeout: Duration::from_secs(60),
        settings: vec![("appendfsync".into(), "everysec".into())],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_redis_provider_starts_serves_and_tears_down() {
    crate::support::require_redis_binaries();
    crate::support::broker_serves_and_tears_down(
        redis_db_plan(ProviderKind::Local, String::new()),
        &redis_plan(SMALL, &[]),
        "Redis 7",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_redis_container_provider_starts_serves_and_tears_down() {
    let image = crate::support::require_redis_image();
    crate::support::broker_serves_and_tears_down(
        redis_db_plan(ProviderKind::Container, image),
        &redis_plan(SMALL, &[]),
        "Redis 7",
    )
    .await;
}

/// `validate` of the smoke scenario on Redis with `set` on top.
fn validate_on_redis(set: &str) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args(["validate", "scenarios/smoke.toml", "--set"])
        .args(["database.engine=\"redis\"", "--set", set])
        .output()
        .unwrap()
}

#[test]
fn redis_refuses_what_only_databases_have_in_one_line() {
    let cases = [
        ("queue.variant=\"notify\"", "queue.variant"),
        ("queue.fillfactor=70", "queue.fillfactor"),
        (
            "queue.stale_statistics=true",
            "queue.stale_statistics: the queue table has planner statistics on PostgreSQL and MariaDB only",
        ),
        (
            "phases.0.faults=[{ kind = \"analyze\" }]",
            "fault analyze runs on PostgreSQL and MariaDB only",
        ),
        (
            "database.settings.autovacuum_naptime=\"1s\"",
            "database.settings.autovacuum_naptime: a database's cleanup setting; Redis has no vacuum",
        ),
        (
            "phases.0.faults=[{ kind = \"idle_in_transaction\" }]",
            "idle_in_transaction",
        ),
        (
            "consumers.claim_mode=\"in_transaction\"",
            "consumers.claim_mode: a claim held in the worker's transaction on PostgreSQL, MariaDB, RabbitMQ, Kafka API and the in-memory queue only",
        ),
    ];
    for (set, expected) in cases {
        let out = validate_on_redis(set);
        crate::support::assert_bad_input(&out, set, expected);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.to_lowercase().contains("redis"),
            "{set}: names the backend: {err}"
        );
    }
    // The smoke scenario itself is valid on Redis: its claims default to committed.
    let out = validate_on_redis("consumers.count=4");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_redis_killed_and_restarted_loses_nothing() {
    // The default durability (the append-only file fsynced before each reply) through a
    // SIGKILL: every acknowledged job is still there after the restart; entries a worker held
    // when its connection broke come back through the reaper.
    crate::support::require_redis_binaries();
    let p = crate::support::local_plan(
        SMALL,
        &[
            "database.engine=\"redis\"",
            "phases.0.duration=\"6s\"",
            "reaper.interval=\"200ms\"",
            "reaper.stale_after=\"500ms\"",
            "phases.0.faults=[{ kind = \"restart_server\", after = \"2s\", down_for = \"1s\", mode = \"immediate\" }]",
        ],
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    crate::support::assert_restart_survived(&outcome);
    assert_nothing_lost(&outcome.results.summary);
}
