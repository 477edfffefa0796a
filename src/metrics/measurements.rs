//! What a run measured, as plain data: the phase windows, the counts per window, the
//! one-second timeline, and what the recorder hands back when the load ends
//! ([`Measurements`]): histograms, the ledger, the database samples and the probes. The
//! recorder (`recorder`) fills them; the proof and the reports read them.

use super::event::{FaultRecord, JobId};
use super::histogram::MetricSet;
use super::ledger::Ledger;
use crate::backend::{ClaimProbe, DbSample, TableStats};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a window of the run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WindowKind {
    /// Jobs bulk-inserted before the load started.
    Prefill,
    /// A scenario phase.
    Phase,
    /// After the last phase: producers stopped, consumers finish the backlog.
    Drain,
}

/// A span of the run clock, `[start_us, end_us)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseWindow {
    pub name: String,
    pub kind: WindowKind,
    pub start_us: u64,
    pub end_us: u64,
    pub measured: bool,
    /// A phase's offered rate, jobs/s; `None` for a phase at the producers' most (closed
    /// loop) and for the prefill and the drain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_per_s: Option<f64>,
    /// The kinds of the faults the phase ran (`kill_workers`, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<String>,
}

impl PhaseWindow {
    pub fn new(
        name: &str,
        kind: WindowKind,
        start_us: u64,
        end_us: u64,
        measured: bool,
    ) -> PhaseWindow {
        PhaseWindow {
            name: name.to_string(),
            kind,
            start_us,
            end_us,
            measured,
            offered_per_s: None,
            faults: Vec::new(),
        }
    }

    /// The window with the rate its phase offered and the kinds of its faults.
    pub fn offering(mut self, offered_per_s: Option<f64>, faults: Vec<String>) -> PhaseWindow {
        self.offered_per_s = offered_per_s;
        self.faults = faults;
        self
    }

    /// The phase ran the harness's own readers of the queue table (`active_readers`), whose
    /// scans are not the workers'.
    pub fn has_own_readers(&self) -> bool {
        self.faults.iter().any(|f| f == "active_readers")
    }
}

/// Counts attributed to one window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseCounts {
    pub enqueued: u64,
    pub completed: u64,
    /// Failure updates (retries and dead letters).
    pub failed: u64,
    pub dead_lettered: u64,
    pub claims: u64,
    pub empty_polls: u64,
    /// Claim statements run: one per batch of jobs claimed, and one per empty poll.
    #[serde(default)]
    pub claim_statements: u64,
    pub sent_late: u64,
    /// Late jobs that were due while every producer connection the fleet may have was busy:
    /// late because inserts were slow, not because the harness woke late.
    #[serde(default)]
    pub sent_late_behind: u64,
    /// Producer connections opened (the most, where windows are added up).
    #[serde(default)]
    pub producer_connections: u64,
    /// The most inserts under way at once.
    #[serde(default)]
    pub inserts_in_flight: u64,
    /// Scheduled jobs never sent because their phase ended first.
    #[serde(default)]
    pub dropped: u64,
    pub enqueue_errors: u64,
    pub worker_errors: u64,
    /// Jobs the stale-job reaper returned to `pending` (or dead-lettered).
    pub reaped: u64,
    /// Completions and failure updates that finished nothing: the job was no longer the
    /// worker's (reaped), and the design refused the stale outcome.
    #[serde(default)]
    pub stale_completions: u64,
    #[serde(default)]
    pub stale_failures: u64,
    /// Inserts tried again after a failure that left them uncommitted.
    pub enqueue_retries: u64,
    /// Inserts whose commit outcome was unknown when the connection broke.
    pub in_doubt_enqueues: u64,
    /// Outbox business transactions that rolled back (with their job insert).
    pub rolled_back_enqueues: u64,
    /// Workers that crashed or were killed.
    pub worker_crashes: u64,
    /// Poison jobs (always fail) and crashing jobs (always crash their worker) enqueued.
    pub poison_enqueued: u64,
    pub crash_enqueued: u64,
    /// A bystander's statements that failed.
    #[serde(default)]
    pub bystander_errors: u64,
    /// The workers' busy time (claim statements, handlers and outcome statements, as the
    /// workers report it), µs summed over workers: against the workers' time in the window,
    /// how much of it they worked rather than waited for jobs.
    #[serde(default)]
    pub workers_busy_us: u64,
    /// The handlers' part of that time, µs.
    #[serde(default)]
    pub handler_busy_us: u64,
    /// The producers' inserts under way (from sending to commit), µs summed over inserts.
    #[serde(default)]
    pub producers_busy_us: u64,
}

impl PhaseCounts {
    pub fn add(&mut self, o: &PhaseCounts) {
        self.enqueued += o.enqueued;
        self.completed += o.completed;
        self.failed += o.failed;
        self.dead_lettered += o.dead_lettered;
        self.claims += o.claims;
        self.empty_polls += o.empty_polls;
        self.claim_statements += o.claim_statements;
        self.sent_late += o.sent_late;
        self.sent_late_behind += o.sent_late_behind;
        self.producer_connections = self.producer_connections.max(o.producer_connections);
        self.inserts_in_flight = self.inserts_in_flight.max(o.inserts_in_flight);
        self.dropped += o.dropped;
        self.enqueue_errors += o.enqueue_errors;
        self.worker_errors += o.worker_errors;
        self.reaped += o.reaped;
        self.stale_completions += o.stale_completions;
        self.stale_failures += o.stale_failures;
        self.enqueue_retries += o.enqueue_retries;
        self.in_doubt_enqueues += o.in_doubt_enqueues;
        self.rolled_back_enqueues += o.rolled_back_enqueues;
        self.worker_crashes += o.worker_crashes;
        self.poison_enqueued += o.poison_enqueued;
        self.crash_enqueued += o.crash_enqueued;
        self.bystander_errors += o.bystander_errors;
        self.workers_busy_us += o.workers_busy_us;
        self.handler_busy_us += o.handler_busy_us;
        self.producers_busy_us += o.producers_busy_us;
    }
}

/// One second of the run (second 0 starts when the load starts).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TimelineRow {
    pub second: i64,
    pub phase: String,
    pub enqueued: u64,
    pub completed: u64,
    pub failed: u64,
    pub dead_lettered: u64,
    pub enqueue_errors: u64,
    pub worker_errors: u64,
    /// `pending` rows, sampled from the database during this second.
    pub queue_depth: Option<i64>,
    /// Claim statements the workers ran in this second (a batch claimed, or an empty poll).
    #[serde(default)]
    pub claim_statements: u64,
    /// End-to-end latency of jobs completed in this second.
    pub e2e_p50_ms: Option<f64>,
    pub e2e_p99_ms: Option<f64>,
    pub e2e_max_ms: Option<f64>,
    /// Largest schedule lag of jobs sent in this second.
    pub schedule_lag_max_ms: Option<f64>,
    /// Median claim statement latency of claims returned in this second.
    #[serde(default)]
    pub claim_p50_ms: Option<f64>,
    /// The bystander's p99 in this second (statements answered in it).
    #[serde(default)]
    pub bystander_p99_ms: Option<f64>,
    /// Workers busy in this second, in workers (busy seconds reported in it: 7.6 of 8).
    #[serde(default)]
    pub workers_busy: f64,
    /// Producer inserts under way in this second, in connections (insert seconds in it).
    #[serde(default)]
    pub producers_busy: f64,
}

/// How the errors map names a worker's death: the prefix, then a signal or exit status.
pub const WORKER_DIED: &str = "worker died: ";

/// Everything the recorder measured, handed over when the event stream ends.
#[derive(Debug, Clone)]
pub struct Measurements {
    pub windows: Vec<PhaseWindow>,
    pub counts: Vec<PhaseCounts>,
    pub metrics: Vec<MetricSet>,
    /// Per window: when its last job finished (done or failure update), µs on the run clock.
    pub last_finished_us: Vec<u64>,
    pub timeline: Vec<TimelineRow>,
    /// HdrHistogram interval log (one tag per metric, one interval per second).
    pub hlog: Vec<u8>,
    pub ledger: Ledger,
    /// Samples that arrived after their second had been written out (added to a later one).
    pub late_samples: u64,
    /// Distinct error messages seen, with counts (first 20 kinds); how worker processes died
    /// among them, each under [`WORKER_DIED`].
    pub errors: BTreeMap<String, u64>,
    /// Faults injected, in order.
    pub faults: Vec<FaultRecord>,
    /// Jobs held by frozen workers, and when they became available again.
    pub frozen: Vec<FrozenJob>,
    /// Jobs held by workers that died (the first [`ORPHANS_KEPT`]), and when each ran again.
    pub orphaned: Vec<OrphanedJob>,
    /// Queue-table statistics taken by faults.
    pub probes: Vec<TableProbe>,
    /// The permanent database error that stopped the run: "role: message".
    pub fatal: Option<String>,
    /// Database statistics sampled during the run: (run-clock µs, sample).
    pub db_samples: Vec<(u64, DbSample)>,
    /// The harness's own figures, one sample a second.
    pub harness: Vec<super::harness::HarnessSample>,
    /// The claim measured under `EXPLAIN (ANALYZE, BUFFERS)` at phase boundaries.
    pub claim_probes: Vec<ClaimProbeRecord>,
    /// The harness's ANALYZEs of the queue table during the load, in order.
    pub analyzed: Vec<AnalyzedRecord>,
    /// What a library's worker processes said at their hello, each distinct saying once.
    pub library_workers: Vec<LibraryWorkers>,
}

/// Worker processes of a library that said the same at their hello: the library and its
/// version, and the settings they reported (what ran, for the results).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LibraryWorkers {
    /// As the glue named it, e.g. `dramatiq-pg 0.12.0`.
    pub library: Option<String>,
    /// The DBQ_BENCH_* settings the glue read and the library's own, as it reported them.
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
    /// The consumer slots whose processes said this, and how many hellos (lives) in all.
    pub slots: Vec<u32>,
    pub hellos: u64,
}

impl LibraryWorkers {
    /// The library (and version) a run's workers said they are: `pgqueuer 1.6.0`.
    pub fn named(workers: &[LibraryWorkers]) -> Option<String> {
        let mut named: Vec<&str> = workers
            .iter()
            .filter_map(|w| w.library.as_deref())
            .collect();
        named.dedup();
        (!named.is_empty()).then(|| named.join(" + "))
    }

    /// `dramatiq-pg 0.12.0 (slots 0–3, 5 hellos; prefetch=1000, …)`, for the reports.
    pub fn line(&self) -> String {
        let settings: Vec<String> = self
            .settings
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let settings = match settings.is_empty() {
            true => "no settings reported".to_string(),
            false => settings.join(", "),
        };
        format!(
            "{} ({} process(es), {} hello(s); {settings})",
            self.library
                .as_deref()
                .unwrap_or("a library that did not name itself"),
            self.slots.len(),
            self.hellos
        )
    }
}

/// One of the harness's ANALYZEs of the queue table once the load had put rows in it.
#[derive(Debug, Clone, PartialEq)]
pub struct AnalyzedRecord {
    pub at_us: u64,
    pub took_us: u64,
    /// Jobs enqueued by then.
    pub rows: u64,
    pub error: Option<String>,
}

impl Measurements {
    /// When the first phase started, µs on the run clock: the zero of every "seconds since
    /// the load started" in the report.
    /// Seconds from the start of the load to `at_us` (negative before it: the prefill).
    pub fn since_load_s(&self, at_us: u64) -> f64 {
        (at_us as f64 - self.load_start_us() as f64) / 1e6
    }

    pub fn load_start_us(&self) -> u64 {
        self.windows
            .iter()
            .find(|w| w.kind == WindowKind::Phase)
            .map_or(0, |w| w.start_us)
    }

    /// From the start of the first measured phase to the end of the last, µs on the run
    /// clock.
    pub fn measured_span(&self) -> Option<(u64, u64)> {
        let measured = self.windows.iter().filter(|w| w.measured);
        let from = measured.clone().map(|w| w.start_us).min()?;
        let to = measured.map(|w| w.end_us).max()?;
        Some((from, to))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimProbeRecord {
    pub at_us: u64,
    pub label: String,
    pub probe: ClaimProbe,
}

/// A job whose worker was frozen while holding it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrozenJob {
    pub job: JobId,
    pub slot: u32,
    pub frozen_at_us: u64,
    /// When it was next claimed (by anyone) or finished, if ever.
    pub released_at_us: Option<u64>,
}

/// Orphaned jobs kept for the report: enough to say what became of them, bounded however
/// many crashes a run has.
pub const ORPHANS_KEPT: usize = 1000;

/// A job whose worker died (was killed, or crashed) while holding it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrphanedJob {
    pub job: JobId,
    pub slot: u32,
    pub died_at_us: u64,
    /// When a worker next started it, if one did.
    pub ran_again_at_us: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableProbe {
    pub at_us: u64,
    pub label: String,
    pub stats: TableStats,
}
