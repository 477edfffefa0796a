//! A whole step on the in-memory queue: the fleets, the recorder, the ledger and the proof
//! together, faults included. (Every integration test repeats this on a real server.)

use super::*;
use crate::backend::memory::MemoryQueue;
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
    let overrides = Overrides {
        sets: vec![mode],
        ..Overrides::default()
    };
    let scenario = parse("memory.toml", SCENARIO, &overrides).unwrap();
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
            j.completed + j.dead_lettered + j.finished_without_report,
            j.enqueued,
            "{mode:?}: {j:?}"
        );
        // In committed mode a crashed worker's job waits for the reaper.
        if mode == ClaimMode::Committed {
            assert!(j.reaped > 0, "{j:?}");
        }
    }
}
