//! A whole step on the in-memory queue: the fleets, the recorder, the ledger and the proof
//! together, faults included. (Every integration test repeats this on a real server.)

use super::*;
use crate::backend::memory::{MemoryQueue, Mishaps};
use crate::scenario::load::{Overrides, parse};
use crate::scenario::{ClaimMode, EnvDefaults};
use crate::status::Kept;

const SCENARIO: &str = r#"
seed = 11
[queue]
max_retries = 3
backoff = { base = "5ms" }
[producers]
count = 2
rate = 400
poison_fraction = 0.02
[consumers]
count = 4
poll_interval = "5ms"
[consumers.handler]
duration = { fixed = "1ms" }
error_rate = 0.1
[reaper]
interval = "50ms"
stale_after = "200ms"
count_as_attempt = true
[drain]
timeout = "20s"
[[phases]]
name = "steady"
duration = "1s"
faults = [{ kind = "crash_workers", every = "100ms", count = 1 }]
"#;

async fn step(claim_mode: ClaimMode) -> (RunOutcome, Vec<String>) {
    let mode = format!("consumers.claim_mode=\"{}\"", claim_mode.as_str());
    step_of(SCENARIO, vec![mode], Mishaps::default()).await
}

/// A step of `scenario` with `sets` applied, on an in-memory queue that misbehaves as
/// `mishaps` say; what it measured, and what it said.
async fn step_of(scenario: &str, sets: Vec<String>, mishaps: Mishaps) -> (RunOutcome, Vec<String>) {
    let overrides = Overrides {
        sets,
        ..Overrides::default()
    };
    let scenario = parse("memory.toml", scenario, &overrides).unwrap();
    let plan = Plan::build(scenario, "memory.toml", "memory", &EnvDefaults::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let said = Arc::new(Kept::default());
    let opts = RunOptions {
        out_dir: Some(dir.path().to_path_buf()),
        status: said.clone(),
        ..RunOptions::default()
    };
    let shutdown = CancellationToken::new();
    let queue = MemoryQueue::new(&plan.queue);
    queue.set_mishaps(mishaps);
    let session = Session::on_backend(&plan, &opts, queue, ServerRecord::default(), &shutdown)
        .await
        .unwrap();
    let outcome = run_session(session, &plan, &opts, &shutdown).await.unwrap();
    let lines = said.0.lock().unwrap().clone();
    (outcome, lines)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crashes_failures_and_poison_on_the_in_memory_queue_lose_nothing() {
    for mode in [ClaimMode::InTransaction, ClaimMode::Committed] {
        let (outcome, said) = step(mode).await;
        let s = outcome.results.summary;
        let j = &s.jobs;
        assert!(
            said.contains(&"load started: 1 phase(s), 1 s".to_string()),
            "{said:?}"
        );
        assert!(s.accounting.ok, "{mode:?}: {}", s.accounting.verdict);
        assert_eq!((j.lost, j.unfinished), (0, 0), "{mode:?}: {j:?}");
        assert!(s.faults.worker_crashes > 0, "{mode:?}: {:?}", s.faults);
        assert!(
            j.failed_attempts > 0 && j.dead_lettered > 0,
            "{mode:?}: {j:?}"
        );
        assert_eq!(
            j.done + j.dead_lettered + j.unfinished + j.lost,
            j.enqueued,
            "{mode:?}: {j:?}"
        );
        // In committed mode a crashed worker's job waits for the reaper.
        if mode == ClaimMode::Committed {
            assert!(j.reaped > 0, "{j:?}");
        }
    }
}

/// 200 jobs/s for 2 s against inserts that take 20 ms each: one connection can send 50/s,
/// so the fleet needs about four at once.
const SLOW_INSERTS: &str = r#"
seed = 5
[producers]
count = 1
rate = 200
[consumers]
count = 2
poll_interval = "5ms"
[consumers.handler]
duration = { fixed = "0ms" }
[drain]
timeout = "20s"
[[phases]]
name = "steady"
duration = "2s"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arrivals_go_to_whichever_producer_is_free_and_the_fleet_grows_when_none_is() {
    let slow = Mishaps {
        slow_inserts: Some(std::time::Duration::from_millis(20)),
        ..Mishaps::default()
    };
    let grown = step_of(SLOW_INSERTS, vec![], slow.clone()).await.0;
    let held = step_of(SLOW_INSERTS, vec!["producers.max_count=1".into()], slow)
        .await
        .0;
    let (g, h) = (&grown.results.summary, &held.results.summary);
    for s in [g, h] {
        assert!(s.accounting.ok, "{}", s.accounting.verdict);
        assert_eq!(s.jobs.lost, 0, "{:?}", s.jobs);
    }
    // Allowed to grow (to 8 by default), the fleet opened more connections and kept
    // several inserts under way; held to one, it sent one at a time.
    assert!(g.producers.connections > 1, "{:?}", g.producers);
    assert!(g.producers.inserts_in_flight >= 2, "{:?}", g.producers);
    assert_eq!(
        (h.producers.connections, h.producers.inserts_in_flight),
        (1, 1)
    );
    // Held to one connection, most jobs went out late for want of a free producer, and
    // the verdict blames the load generator's connection limit, not the queue.
    let late_behind = h
        .phases
        .iter()
        .map(|p| p.jobs.sent_late_behind + p.jobs.dropped)
        .sum::<u64>();
    assert!(late_behind > 200, "{:?}", h.phases);
    assert!(
        h.verdict.text.contains("producers.max_count"),
        "{}",
        h.verdict.text
    );
    // Grown, far fewer were late for that reason.
    let grown_behind = g
        .phases
        .iter()
        .map(|p| p.jobs.sent_late_behind)
        .sum::<u64>();
    assert!(
        grown_behind * 4 < late_behind,
        "{grown_behind} vs {late_behind}"
    );
}
