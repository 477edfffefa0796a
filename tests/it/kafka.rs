//! Kafka, the seed's other broker: the same scenarios, load, faults and proof on a
//! Kafka-API broker (a shared local Tansu, or DBQ_TEST_KAFKA_URL). What the proof says is
//! checked against the broker: the group's committed offsets at the topics' ends, the dead
//! letters holding exactly the dead-lettered jobs; records deleted before anyone consumed them
//! are named lost.

use crate::support::{
    NOT_DRAINED, SMALL, assert_bad_input, assert_nothing_lost, assert_proof_adds_up, kafka_plan,
    lost_named, prove_again, run_plan, shared_kafka_url,
};
use dbq_bench::backend::{self, ClaimMode};
use dbq_bench::run::{self, RunOptions, Session};
use dbq_bench::scenario::{DatabasePlan, Engine, ProviderKind};
use rdkafka::ClientConfig;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A short run of one member on two partitions, its queue kept for what a test does to it.
const SHORT_ONE_MEMBER: &[&str] = &[
    "phases.0.duration=1s",
    "producers.rate=20",
    "queue.partitions=2",
    "consumers.count=1",
];

/// A client configuration of the test's own for the shared broker.
fn config() -> ClientConfig {
    let settings = dbq_bench::backend::kafka::url::client_settings(shared_kafka_url()).unwrap();
    let mut c = ClientConfig::new();
    for (k, v) in settings {
        c.set(k, v);
    }
    c
}

/// (partition, low, high) of every partition of `topic` that has records.
fn watermarks(topic: &str, partitions: i32) -> Vec<(i32, i64, i64)> {
    let c: BaseConsumer = config().create().unwrap();
    (0..partitions)
        .map(|p| {
            let (low, high) = c
                .fetch_watermarks(topic, p, Duration::from_secs(10))
                .unwrap();
            (p, low, high)
        })
        .filter(|(_, low, high)| high > low)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seed_runs_on_kafka_with_every_job_accounted_for() {
    let p = kafka_plan(
        SMALL,
        &[
            "producers.prefill=300",
            "consumers.handler.error_rate=0.1",
            "producers.poison_fraction=0.02",
            "queue.partitions=4",
            // One member: a group's rebalances as members join can hand a record to two
            // members (at least once), which this test is not about.
            "consumers.count=1",
        ],
    );
    let (outcome, _dir) = run_plan(&p, true).await;
    let s = &outcome.results.summary;
    assert_nothing_lost(s);
    assert!(s.jobs.failed_attempts > 0, "{:?}", s.jobs);
    assert!(s.jobs.dead_lettered > 0, "{:?}", s.jobs);
    assert_eq!(s.accounting.table.duplicate_completions, None);
    let queue = outcome.kept_queue.as_ref().expect("kept");
    let ns = queue.namespace();
    // The dead letters hold exactly the dead-lettered jobs.
    let dead: i64 = watermarks(&format!("{ns}.dead"), 1)
        .iter()
        .map(|(_, low, high)| high - low)
        .sum();
    assert_eq!(dead as u64, s.jobs.dead_lettered, "the dead letters");
    queue.drop_namespace().await.unwrap();
    backend::release(&**queue);
}

/// Workers started together join the group one after another, and each join hands every
/// member its part again, pausing them all. A step's load starts only once the group has
/// settled with every worker in it (the coordinator's own description), on a second step of
/// the same session too (a capacity search's), once the first step's members have left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_steps_load_starts_once_the_workers_group_has_formed() {
    let p = kafka_plan(SMALL, &["queue.partitions=4", "consumers.count=3"]);
    let dir = tempfile::tempdir().unwrap();
    let shutdown = CancellationToken::new();
    let mut opts = RunOptions {
        worker_exe: Some(env!("CARGO_BIN_EXE_dbq-bench").into()),
        ..RunOptions::default()
    };
    let server = run::provision(&p, &opts.status).await.unwrap();
    let mut session = Session::set_up(&p, &opts, &server, &shutdown)
        .await
        .unwrap();
    for step in 0..2 {
        opts.out_dir = Some(dir.path().join(format!("step-{step}")));
        let outcome = session.step(&p, &opts, &shutdown).await.unwrap();
        let s = &outcome.results.summary;
        assert_nothing_lost(s);
        let g = s
            .run
            .group_forming
            .as_ref()
            .expect("a group was waited for");
        assert!(g.formed, "step {step}: {}", g.sentence());
        assert_eq!((g.members, g.expected), (3, 3), "step {step}");
        assert_eq!(g.state, "Stable", "step {step}");
    }
    assert!(session.tear_down(false, &opts.status).await.is_none());
    run::release(server, false, &opts.status).await;
}

/// Workers that crash mid-batch (their connection dropped, their consumer gone from the
/// group): their records were never committed, so the member that takes their partitions
/// reads them again from the last committed offset. Every repeat is explained by a crash,
/// and nothing is lost. One worker at a time: on Tansu 0.6.0 a group of several members
/// that loses members without a goodbye (SIGKILL) can stall (see docs/brokers.md), so the
/// kill of a worker process among others is not what this test measures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crashed_workers_on_kafka_have_their_records_read_again() {
    let p = kafka_plan(
        SMALL,
        &[
            "phases.0.duration=3s",
            "queue.variant=\"batch\"",
            "queue.claim_batch=5",
            "queue.partitions=2",
            "consumers.count=1",
            "producers.rate=60",
            "consumers.handler.duration.fixed=5ms",
            "consumers.restart_after=\"100ms\"",
            "phases.0.faults=[{ kind = \"crash_workers\", every = \"700ms\" }]",
        ],
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    assert!(s.faults.worker_crashes > 0, "{:?}", s.faults.events);
    assert_nothing_lost(s);
    let x = &s.accounting.executions;
    assert!(x.extra_executions > 0, "records read again: {x:?}");
    assert_eq!(x.unexplained_executions, 0, "{x:?}");
}

/// Records removed from the jobs' topic before anyone consumed them are gone from the log:
/// the proof names each job lost. They are removed by deleting the topic and making it
/// again, empty: DeleteRecords, the finer way, is not implemented by Tansu 0.6.0's memory
/// storage (its handler is a `todo!()`), so on Tansu it cannot be what this test uses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_removed_before_they_were_consumed_are_named_lost() {
    let p = kafka_plan(SMALL, SHORT_ONE_MEMBER);
    let (mut outcome, _dir) = run_plan(&p, true).await;
    assert_nothing_lost(&outcome.results.summary);
    let queue = outcome.kept_queue.clone().expect("kept");
    let ids = crate::support::enqueue_beside(&*queue, &mut outcome.ledger, 3).await;
    let jobs = format!("{}.jobs", queue.namespace());
    let admin: AdminClient<DefaultClientContext> = config().create().unwrap();
    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
    for deleted in admin.delete_topics(&[&jobs], &options).await.unwrap() {
        deleted.unwrap();
    }
    let empty = NewTopic::new(&jobs, 2, TopicReplication::Fixed(1));
    for made in admin.create_topics(&[empty], &options).await.unwrap() {
        made.unwrap();
    }

    let proof = prove_again(&*queue, &outcome.ledger, NOT_DRAINED).await;
    let lost = lost_named(&proof);
    let expected: Vec<(i64, &str)> = ids.iter().map(|id| (*id, "missing")).collect();
    assert_eq!(lost, expected, "{}", proof.verdict);
    assert_proof_adds_up(&proof);
    // The runner heard where each record went: the broker lost them, not the workers.
    assert_eq!(proof.lost_by_queue, 3, "{}", proof.verdict);
    for p in &proof.lost {
        let why = p.why.as_deref().unwrap_or_default();
        assert!(why.contains("the partition now ends at offset 0"), "{p:?}");
    }
    queue.drop_namespace().await.unwrap();
    backend::release(&*queue);
}

/// A client of the workers' group that commits its offsets past records nobody consumed
/// loses their jobs: the proof names them lost, and not as the broker's loss (their records
/// are still where the broker put them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_a_rogue_commit_passed_are_lost_by_the_group_not_the_broker() {
    let p = kafka_plan(SMALL, SHORT_ONE_MEMBER);
    let (mut outcome, _dir) = run_plan(&p, true).await;
    let queue = outcome.kept_queue.clone().expect("kept");
    let ids = crate::support::enqueue_beside(&*queue, &mut outcome.ledger, 3).await;
    let ns = queue.namespace();
    let (jobs, group) = (format!("{ns}.jobs"), format!("{ns}.workers"));
    let rogue: BaseConsumer = config().set("group.id", &group).create().unwrap();
    let mut past = TopicPartitionList::new();
    for (partition, _, high) in watermarks(&jobs, 2) {
        past.add_partition_offset(&jobs, partition, Offset::Offset(high))
            .unwrap();
    }
    rogue.commit(&past, CommitMode::Sync).unwrap();

    let proof = prove_again(&*queue, &outcome.ledger, NOT_DRAINED).await;
    let lost: Vec<i64> = proof.lost.iter().map(|p| p.id).collect();
    assert_eq!(lost, ids, "{}", proof.verdict);
    assert_eq!(proof.lost_by_queue, 0, "{}", proof.verdict);
    for p in &proof.lost {
        let why = p.why.as_deref().unwrap_or_default();
        assert!(why.contains("a commit passed it unprocessed"), "{p:?}");
    }
    queue.drop_namespace().await.unwrap();
    backend::release(&*queue);
}

/// A member that stops answering (SIGSTOP) keeps its partitions until the group notices
/// (the session timeout): its waiting records go uncommitted meanwhile, and the summary names
/// the stall from the partitions' committed offsets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_that_stops_answering_stalls_its_partitions_and_the_summary_says_so() {
    let p = kafka_plan(
        SMALL,
        &[
            "phases.0.duration=\"10s\"",
            "producers.rate=20",
            "queue.partitions=2",
            "consumers.count=1",
            "consumers.processes=true",
            "sampler.interval=\"500ms\"",
            "phases.0.faults=[{ kind = \"freeze_workers\", after = \"1s\", for = \"7s\" }]",
        ],
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    assert_nothing_lost(s);
    let g = s.stalled_group.as_ref().expect("a stall named");
    assert_eq!(g.most_partitions, 2, "{g:?}");
    assert!(g.longest_s >= 3.0, "{g:?}");
    assert!(g.longest_at_s > 1.0, "{g:?}");
    assert_eq!(g.at_end_partitions, 0, "the drain ended it: {g:?}");
}

/// Writes `(headers, payload)` records into partition 0 of `topic`, as a client other than
/// the harness would.
async fn write_records(topic: &str, records: &[(Vec<(&str, &str)>, &str)]) {
    let producer: FutureProducer = config().create().unwrap();
    for (headers, payload) in records {
        let mut h = OwnedHeaders::new();
        for (key, value) in headers {
            h = h.insert(Header {
                key,
                value: Some(*value),
            });
        }
        let record = FutureRecord::<str, str>::to(topic)
            .partition(0)
            .payload(payload)
            .headers(h);
        producer
            .send(record, Duration::from_secs(10))
            .await
            .map_err(|(e, _)| e)
            .unwrap();
    }
}

/// Records the harness never produced, written into the jobs' topic by another client: one
/// without a job id, a copy of finished job 1 in the harness's own shape, and a job id never
/// given out. A worker passes the foreign record over without running it (and commits past
/// it); the proof names all three, apart from the jobs (job 1 is not blamed), and fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_the_harness_never_produced_are_named_and_the_copied_job_not_blamed() {
    let p = kafka_plan(SMALL, SHORT_ONE_MEMBER);
    let (outcome, _dir) = run_plan(&p, true).await;
    assert_nothing_lost(&outcome.results.summary);
    let queue = outcome.kept_queue.clone().expect("kept");
    let jobs = format!("{}.jobs", queue.namespace());
    let shaped = |id| vec![("id", id), ("type", "email"), ("retries", "0")];
    write_records(
        &jobs,
        &[
            (vec![("source", "another team")], "not a job"),
            (shaped("1"), r#"{"t":0}"#),
            (shaped("900000001"), r#"{"t":0}"#),
        ],
    )
    .await;
    let mut worker = queue.connect("worker-rogue-test").await.unwrap();
    let mut ran: Vec<i64> = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while ran.len() < 2 && std::time::Instant::now() < deadline {
        let claimed = worker.claim(ClaimMode::InTransaction).await.unwrap();
        let ids: Vec<i64> = claimed.iter().map(|j| j.id).collect();
        ran.extend(&ids);
        worker.finish(ClaimMode::InTransaction, &ids).await.unwrap();
    }
    ran.sort();
    assert_eq!(
        ran,
        [1, 900_000_001],
        "the harness-shaped ones run; the foreign one not"
    );
    let waiting = worker.status_counts().await.unwrap();
    assert_eq!(
        waiting[0],
        ("pending".to_string(), 0),
        "committed past all three"
    );
    worker.close().await;

    let proof = prove_again(&*queue, &outcome.ledger, NOT_DRAINED).await;
    assert!(!proof.sound, "{}", proof.verdict);
    assert!(proof.lost.is_empty(), "job 1 not blamed: {}", proof.verdict);
    assert_eq!(proof.strangers_count, 3, "{}", proof.verdict);
    let whys: Vec<&str> = proof.strangers.iter().map(|s| s.why.as_str()).collect();
    assert!(whys[0].contains("no job id"), "{whys:?}");
    assert!(whys[1].contains("a copy of job 1,"), "{whys:?}");
    assert!(whys[2].contains("never gave out"), "{whys:?}");
    assert!(
        proof
            .verdict
            .contains("3 record(s) in the queue the harness never produced"),
        "{}",
        proof.verdict
    );
    queue.drop_namespace().await.unwrap();
    backend::release(&*queue);
}

#[test]
fn kafka_refuses_what_it_cannot_do_in_one_line() {
    let validate = |sets: &[&str]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_dbq-bench"));
        cmd.args([
            "validate",
            "scenarios/smoke.toml",
            "--set",
            "database.engine=\"kafka\"",
        ]);
        for set in sets {
            cmd.args(["--set", set]);
        }
        cmd.output().unwrap()
    };
    let cases = [
        ("queue.variant=\"delete\"", "queue.variant"),
        ("consumers.claim_mode=\"committed\"", "consumers.claim_mode"),
        (
            "phases.0.faults=[{ kind = \"kill_backends\" }]",
            "kill_backends",
        ),
        ("reaper.count_as_attempt=true", "reaper.count_as_attempt"),
        ("queue.partitions=0", "queue.partitions"),
        // Kafka forgets a consumed record: no audit of completions can be kept.
        ("verify.completion_audit=true", "verify.completion_audit"),
        // Credentials that PLAINTEXT (the default protocol) would never send.
        (
            "database.url=\"kafka://app:s3cret@localhost:9092\"",
            "security.protocol",
        ),
    ];
    for (set, expected) in cases {
        let out = validate(&[set]);
        assert_bad_input(&out, set, expected);
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!said.contains("s3cret"), "{said}");
    }
    assert!(validate(&["queue.partitions=3"]).status.success());
    assert!(
        validate(&["verify.completion_audit=false"])
            .status
            .success()
    );
    // The partitions are Kafka's alone.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args([
            "validate",
            "scenarios/smoke.toml",
            "--set",
            "queue.partitions=3",
        ])
        .output()
        .unwrap();
    assert_bad_input(&out, "partitions on postgres", "queue.partitions");
}

fn kafka_db_plan(provider: ProviderKind, image: String) -> DatabasePlan {
    DatabasePlan {
        engine: Engine::Kafka,
        provider,
        image,
        version: None,
        url: None,
        startup_timeout: Duration::from_secs(60),
        settings: vec![],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_kafka_provider_starts_tansu_serves_and_tears_down() {
    crate::support::require_kafka_binaries();
    crate::support::broker_serves_and_tears_down(
        kafka_db_plan(ProviderKind::Local, String::new()),
        &kafka_plan(SMALL, &[]),
        "Tansu 0.6.0",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kafka_container_provider_starts_tansu_serves_and_tears_down() {
    let image = crate::support::require_kafka_image();
    crate::support::broker_serves_and_tears_down(
        kafka_db_plan(ProviderKind::Container, image),
        &kafka_plan(SMALL, &[]),
        "Tansu 0.6.0",
    )
    .await;
}
