//! The harness's own ceiling: producers → a queue in memory → consumers → recorder →
//! ledger → proof, with no server in the way. What a run measures on a real server can be
//! read against it: a design whose rate comes near it measures the harness, not the queue.
//! `calibrate` prints it; `benches/ceiling.rs` tracks it.

use crate::backend::memory::MemoryQueue;
use crate::error::Failure;
use crate::run::{RunOptions, ServerRecord, Session, run_session};
use crate::scenario::load::{Overrides, parse};
use crate::scenario::{EnvDefaults, HumanDuration, PhaseSection, Plan, PlanChange, Rate};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The load: closed loop (producers insert as fast as they can), a 0 ms handler, one job a
/// claim, the default recorder; no reaper (nothing is ever stale).
const SCENARIO: &str = r#"
name = "ceiling"
description = "The harness alone, on an in-memory queue"
seed = 1
[producers]
count = 2
rate = "max"
[consumers]
count = 4
poll_interval = "1ms"
[consumers.handler]
duration = { fixed = "0ms" }
[reaper]
enabled = false
[drain]
timeout = "30s"
[[phases]]
name = "load"
duration = "2s"
"#;

/// What the harness moved on its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ceiling {
    pub producers: usize,
    pub consumers: usize,
    /// The measured window, s.
    pub window_s: f64,
    /// Jobs committed by producers, and finished by consumers, per second of the window.
    pub enqueued_per_s: f64,
    pub completed_per_s: f64,
    /// The harness's CPU over the window, in cores.
    pub process_cores: Option<f64>,
    /// Every job accounted for.
    pub proof_ok: bool,
}

/// The ceiling's plan: its load for `duration` with `consumers` workers.
pub fn plan(duration: Duration, consumers: u32) -> Plan {
    let scenario = parse("ceiling", SCENARIO, &Overrides::default()).expect("a valid scenario");
    let base = Plan::build(scenario, "ceiling", "ceiling", &EnvDefaults::default())
        .expect("a valid scenario");
    let load = PhaseSection {
        name: "load".into(),
        duration: HumanDuration(duration),
        rate: Some(Rate::Max),
        measured: true,
        faults: Vec::new(),
        thresholds: BTreeMap::new(),
    };
    base.changed([
        PlanChange::Phases(vec![load]),
        PlanChange::Consumers(consumers),
    ])
    .expect("a valid change")
}

/// Runs `plan` on a fresh in-memory queue, its results written to `out_dir`.
pub async fn measure(
    plan: &Plan,
    out_dir: &std::path::Path,
    shutdown: &CancellationToken,
) -> Result<Ceiling, Failure> {
    let queue = MemoryQueue::new(&plan.queue);
    let record = ServerRecord {
        provider: "memory".into(),
        version: "none (in-process)".into(),
        description: "an in-memory queue: no server".into(),
        place: crate::provider::Place::default(),
        settings: BTreeMap::new(),
    };
    let opts = RunOptions {
        out_dir: Some(out_dir.to_path_buf()),
        ..RunOptions::default()
    };
    let session = Session::on_backend(plan, &opts, queue, record, shutdown).await?;
    let s = run_session(session, plan, &opts, shutdown)
        .await?
        .results
        .summary;
    Ok(Ceiling {
        producers: plan.producers.count,
        consumers: plan.consumers.count,
        window_s: s.throughput.window_s,
        enqueued_per_s: s.throughput.enqueued_per_s,
        completed_per_s: s.throughput.completed_per_s,
        process_cores: s.harness.as_ref().and_then(|h| h.process_cores),
        proof_ok: s.accounting.ok,
    })
}

impl Ceiling {
    /// One line for people.
    pub fn line(&self) -> String {
        format!(
            "The harness alone ({} producers in closed loop, {} workers, 0 ms handler, an in-memory queue, {:.0} s): {:.0} jobs/s completed{}{}.",
            self.producers,
            self.consumers,
            self.window_s,
            self.completed_per_s,
            self.process_cores
                .map_or(String::new(), |c| format!(" on {c:.2} cores")),
            if self.proof_ok {
                ", every job accounted for"
            } else {
                "; the proof FAILED"
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole harness on the in-memory queue: every stage runs, every job is proved.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_harness_alone_moves_jobs_and_proves_them() {
        let dir = tempfile::tempdir().unwrap();
        let plan = plan(Duration::from_millis(500), 2);
        let c = measure(&plan, dir.path(), &CancellationToken::new())
            .await
            .unwrap();
        assert!(c.proof_ok);
        assert!(c.completed_per_s > 100.0, "{c:?}");
        assert!(dir.path().join("summary.json").is_file());
        assert!(c.line().contains("jobs/s completed"), "{}", c.line());
    }
}
