//! `summary.json` (schema_version 2; 1 still read): every figure of a run, with what it measured.
//! Built once from the run's set-up, the measurements and the accounting proof; every exporter and
//! the terminal summary read this and nothing else.

use super::article;
use super::dbstats::DbStatsSummary;
use super::design::DesignRecord;
use super::faults::FaultSummary;
use super::phases::Phases;
pub use super::phases::{ClaimProbeSummary, PhaseSummary, ProducerUse, Throughput};
use super::setup::RunSetup;
use super::thresholds::ThresholdResult;
use super::verdict::{self, Backlog, ProducerPace, Verdict};
use crate::accounting::AccountingProof;
use crate::metrics::{
    LatencyReport, Ledger, Measurements, Metric, MetricSet, PhaseCounts, TimelineRow,
};
use crate::thresholds::Threshold;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod database;

pub const SCHEMA_VERSION: u32 = 2;

/// The oldest schema this dbq-bench still reads: schema 1 named the server's version and
/// settings `postgres_version` and `postgres_settings`, whatever the engine.
pub const OLDEST_SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub schema_version: u32,
    /// False when the run was interrupted or the drain timed out.
    pub complete: bool,
    pub interrupted: bool,
    pub tool: ToolInfo,
    pub scenario: ScenarioInfo,
    pub database: DatabaseInfo,
    pub run: RunInfo,
    pub jobs: JobCounts,
    /// How many producer connections the load took (open loop grows them as inserts slow).
    #[serde(default)]
    pub producers: ProducerUse,
    pub throughput: Throughput,
    /// Over the measured phases; see docs/GUIDE.md "How to read the report" for each metric.
    pub latency_ms: LatencyReport,
    /// What the queue's load cost an unrelated workload on the same server (`[bystander]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bystander: Option<super::bystander::BystanderSummary>,
    /// What each job cost the database over the measured phases.
    #[serde(default)]
    pub cost: super::cost::JobCost,
    pub phases: Vec<PhaseSummary>,
    pub accounting: AccountingProof,
    pub queue: QueueInfo,
    /// The design measured, whole (engine, variant and every option that shapes it).
    #[serde(default)]
    pub design: DesignRecord,
    /// A library's workers: what they said at their hello (the library and its version, the
    /// settings they reported), each distinct saying once with the slots that said it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub library_workers: Vec<crate::metrics::LibraryWorkers>,
    pub verdict: Verdict,
    /// The harness's own figures over the measured phases (its timer's lateness, its CPU,
    /// the machine's), which tell a load generator limit from a queue that fell behind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<crate::metrics::HarnessSummary>,
    /// What limited the measured phases together: the workers, the producers, the server's
    /// CPU, its waits, vacuum, the load machine, another process, or none found; with its
    /// evidence, the action it implies and the figures it was read from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<super::limit::Limit>,
    pub faults: FaultSummary,
    /// Where workers share the queue as a group (Kafka): the partitions it stopped reading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stalled_group: Option<super::stall::StalledGroup>,
    /// What the database reported during the run (sampled once per `sampler.interval`).
    pub db_stats: DbStatsSummary,
    /// The claim run once under `EXPLAIN (ANALYZE, BUFFERS)` (rolled back) at the start of
    /// every phase and after the drain.
    pub claim_probes: Vec<ClaimProbeSummary>,
    /// What the workers' statements really read of the queue table, from the server's
    /// counters, and whether they scanned it (a database's; a broker has no plan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_reads: Option<super::reads::TableReads>,
    /// Latency by percentile over the measured phases: (percentile, ms) per metric.
    pub latency_spectrum_ms: BTreeMap<String, Vec<(f64, f64)>>,
    pub thresholds: Vec<ThresholdResult>,
    /// Every threshold passed (true when there are none).
    pub thresholds_passed: bool,
    /// Set when `--abort-on-fail` stopped the run: the threshold that failed.
    pub aborted_by_threshold: Option<String>,
    /// Set when a permanent database error stopped the run: who met it, and the server's
    /// message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fatal_error: Option<String>,
    pub meta: Metadata,
    /// Database errors seen by producers and workers, by kind, and how workers died
    /// (`worker died: SIGSEGV`).
    pub errors: BTreeMap<String, u64>,
}

/// What it takes to reproduce or compare the run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Metadata {
    /// SHA-256 of scenario.resolved.toml.
    pub scenario_sha256: String,
    pub seed: u64,
    pub tool_version: String,
    pub git_commit: String,
    /// The server's own words for its version, whatever its engine (`postgres_version`
    /// in schema 1).
    #[serde(alias = "postgres_version")]
    pub server_version: String,
    /// Key server settings as the server reported them (`postgres_settings` in schema 1).
    #[serde(alias = "postgres_settings")]
    pub server_settings: BTreeMap<String, String>,
    pub cores: usize,
    pub memory_bytes: u64,
    pub started_at: String,
    pub ended_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
}

impl ToolInfo {
    /// This build of the harness.
    fn this() -> ToolInfo {
        ToolInfo {
            name: "dbq-bench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioInfo {
    pub name: String,
    pub description: String,
    pub file: String,
    pub seed: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatabaseInfo {
    /// Which engine; its figures in `db_stats` are read as [`super::dbstats::DbWords`] says.
    #[serde(default)]
    pub engine: crate::backend::Engine,
    pub provider: String,
    pub server_version: String,
    pub description: String,
    /// Where the server's data lived (`a Docker volume at …`, `the container's layer
    /// (fuse-overlayfs)`, `the host's filesystem (…)`); empty in results written before it
    /// was recorded.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub storage: String,
    /// How the run reached it (`the container's own address …`, `the published port …
    /// (through docker-proxy …)`, `127.0.0.1:…`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub route: String,
    /// The schema the run worked in.
    pub schema: String,
    pub settings: BTreeMap<String, String>,
}

impl DatabaseInfo {
    /// `; data on …; reached at …`, or nothing for results written before they were
    /// recorded.
    pub fn place_words(&self) -> String {
        if self.storage.is_empty() {
            return String::new();
        }
        let place = crate::provider::Place {
            storage: self.storage.clone(),
            route: self.route.clone(),
        };
        format!("; {}", place.words())
    }

    /// The engine and its release, what two results must share to be compared
    /// (`PostgreSQL 17`).
    pub fn release(&self) -> String {
        crate::version::release_of(self.engine.label(), &self.server_version)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Wall-clock labels (UTC, RFC 3339). Durations are never computed from them.
    pub started_at: String,
    pub ended_at: String,
    pub clock: String,
    /// Sum of the measured phases' durations (cut short if interrupted), seconds.
    pub measured_window_s: f64,
    /// From the end of the last phase to the last job finishing (or the timeout), seconds.
    pub drain_s: f64,
    pub drain_timed_out: bool,
    /// Timeline samples that arrived after their second was written (put in a later one).
    pub late_timeline_samples: u64,
    /// How the workers' group formed before the load started, where workers share the queue
    /// as one group (Kafka).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_forming: Option<GroupForming>,
}

/// The wait, before a step's load, for its workers to form their group: the load's
/// schedule starts when it has, so that no window carries the group's hand-outs (each
/// member joining pauses every member).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupForming {
    /// The step's workers.
    pub expected: usize,
    /// Members when the wait ended.
    pub members: usize,
    /// The coordinator's word for the group's state when the wait ended.
    pub state: String,
    /// From the workers' start to the group first settling with every worker, seconds on
    /// the run clock (none when it did not).
    pub formed_s: Option<f64>,
    /// From the workers' start to the load's start, seconds on the run clock: the group
    /// settled and then held so for a few seconds (or the wait gave up).
    pub waited_s: f64,
    pub formed: bool,
}

impl GroupForming {
    pub fn sentence(&self) -> String {
        if let (true, Some(formed_s)) = (self.formed, self.formed_s) {
            format!(
                "the load started once the workers' group had formed ({} members, {formed_s:.1} s after the workers started) and held so until {:.1} s",
                self.members, self.waited_s
            )
        } else {
            format!(
                "the workers' group had not formed after {:.0} s ({} of {} members, {}): the load started anyway, and its first windows carry the group's hand-outs",
                self.waited_s, self.members, self.expected, self.state
            )
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct JobCounts {
    /// Jobs whose insert committed (prefilled ones included).
    pub enqueued: u64,
    pub prefilled: u64,
    /// Jobs that ended `done`, each once (reported or found in the table). With
    /// `dead_lettered`, `unfinished` and `lost`, every enqueued job in one place:
    /// enqueued = done + dead_lettered + unfinished + lost (+ unrecorded_successes).
    #[serde(default)]
    pub done: u64,
    /// `done` updates that committed, as workers reported them (a job completed twice
    /// counts twice).
    pub completed: u64,
    /// Jobs that finished (done or dead_letter) without their worker reporting it: it died
    /// right after the commit. Settled from the table by the accounting proof.
    pub finished_without_report: u64,
    /// Jobs that ended in the dead letters, each once.
    pub dead_lettered: u64,
    /// Failure updates that committed (each retry and each dead letter), those whose commit
    /// reply was lost included (settled from the table's `retry_count`).
    pub failed_attempts: u64,
    /// Committed jobs that vanished, or that the ledger and the table disagree on (union).
    pub lost: u64,
    /// Of them, jobs the queue itself lost (acknowledged, then no longer held: a broker
    /// that lost its log); the proof names where each record was.
    #[serde(default)]
    pub lost_by_queue: u64,
    /// A library's successes it never recorded: the handler returned, the job is back in
    /// the library's queue (not lost, not done; the proof fails on them). enqueued = done +
    /// dead_lettered + unfinished + lost + unrecorded_successes.
    #[serde(default)]
    pub unrecorded_successes: u64,
    /// Committed jobs still queued because the run stopped before the queue drained.
    pub unfinished: u64,
    pub duplicate_completions: u64,
    pub enqueue_errors: u64,
    pub worker_errors: u64,
    pub sent_late: u64,
    /// Scheduled jobs the producers never sent: their phase ended first.
    #[serde(default)]
    pub dropped: u64,
    /// Jobs the stale-job reaper returned to `pending`.
    pub reaped: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueInfo {
    pub variant: String,
    pub claim_sql: String,
    /// `EXPLAIN` of the claim before the first phase and after the drain.
    pub claim_plan_start: Vec<String>,
    pub claim_plan_end: Vec<String>,
}

/// What `run` knows besides the measurements, for the summary.
pub struct RunFacts {
    pub provider: String,
    pub server_version: String,
    pub server_description: String,
    pub server_place: crate::provider::Place,
    pub schema: String,
    pub started_at: String,
    pub ended_at: String,
    pub interrupted: bool,
    pub drain_s: f64,
    pub drain_timed_out: bool,
    pub prefilled: u64,
    /// The design as the backend installed it.
    pub design: crate::backend::DesignInfo,
    pub claim_plan_start: Vec<String>,
    pub claim_plan_end: Vec<String>,
    pub server_settings: BTreeMap<String, String>,
    pub aborted_by_threshold: Option<String>,
    /// The bystander measured alone before the load, when the run had one.
    pub bystander_quiet: Option<crate::metrics::LatencySummary>,
    pub group_forming: Option<GroupForming>,
}

impl Summary {
    /// Why the run is incomplete (`None` when it is complete): the one wording every format
    /// uses.
    pub fn incomplete_because(&self) -> Option<String> {
        if self.complete {
            return None;
        }
        Some(if let Some(f) = &self.fatal_error {
            format!("stopped by a permanent error: {f}")
        } else if let Some(t) = &self.aborted_by_threshold {
            format!("stopped early by --abort-on-fail: {t}")
        } else if self.interrupted {
            "interrupted".into()
        } else {
            match self.stalled_group.as_ref().and_then(|g| g.at_end()) {
                Some(why) => format!("the drain timed out: {why}"),
                None => "the drain timed out".into(),
            }
        })
    }

    /// Holds a capacity result against the claim in the verdict (`run --capacity DIR`).
    pub fn cite_capacity(&mut self, citation: article::CapacityCitation) {
        let sentence = citation.sentence(&self.design, self.verdict.completed_per_s);
        self.verdict.text.push_str(&sentence);
        self.verdict.capacity = Some(citation);
    }

    pub fn build(
        setup: &RunSetup,
        m: &Measurements,
        ledger: &Ledger,
        proof: AccountingProof,
        facts: RunFacts,
    ) -> Summary {
        let Phases {
            mut phases,
            measured_counts,
            measured_metrics,
            throughput,
        } = Phases::of(m, facts.prefilled, facts.drain_s);
        let all = all_counts(m);
        let jobs = JobCounts::of(&all, &proof, ledger, facts.prefilled);
        let faults = FaultSummary::build(m, &all, ledger, &proof, setup.claim_rule.as_str());
        let harness = measured_harness(m);
        let producers = ProducerUse::of(setup, &all, &measured_counts);
        let latency_ms = LatencyReport::of(&measured_metrics);
        let mut verdict = verdict::judge(
            &measured_backlog(setup, m, &throughput),
            &throughput,
            &measured_counts,
            latency_ms.end_to_end.p50,
            measured_metrics.get(Metric::ScheduleLag).len(),
            harness.as_ref(),
            &ProducerPace::of(&measured_counts, producers),
        );
        verdict::settle(&mut verdict, &phases, facts.interrupted, m.fatal.as_deref());
        let (db_stats, table_reads, claim_probes) =
            database::database_side(setup, m, &facts, &phases, &mut verdict);
        let cost = database::measured_cost(&db_stats, &phases, setup, complete(&facts, m));
        let limit = super::limit::limits(
            (setup, m),
            &mut phases,
            (&db_stats, table_reads.as_ref()),
            (&measured_counts, &latency_ms),
            (harness.clone(), !verdict.kept_up),
        );
        Summary {
            schema_version: SCHEMA_VERSION,
            complete: complete(&facts, m),
            fatal_error: m.fatal.clone(),
            interrupted: facts.interrupted,
            tool: ToolInfo::this(),
            scenario: ScenarioInfo::of(setup),
            database: DatabaseInfo::of(setup, &facts),
            run: RunInfo::of(&facts, throughput.window_s, m.late_samples),
            jobs,
            producers,
            throughput,
            bystander: super::bystander::BystanderSummary::of(
                setup,
                facts.bystander_quiet,
                &latency_ms,
                &measured_counts,
            ),
            latency_ms,
            cost,
            phases,
            accounting: proof,
            design: DesignRecord::of(setup, &facts.design),
            library_workers: m.library_workers.clone(),
            queue: QueueInfo::of(&facts),
            verdict,
            harness,
            limit,
            faults,
            stalled_group: super::stall::StalledGroup::of(m),
            db_stats,
            claim_probes,
            table_reads,
            latency_spectrum_ms: spectrum(&measured_metrics),
            thresholds: Vec::new(),
            thresholds_passed: true,
            aborted_by_threshold: facts.aborted_by_threshold.clone(),
            meta: Metadata::of(setup, &facts),
            errors: m.errors.clone(),
        }
    }

    /// Judges the plan's thresholds on this summary and records the results.
    pub fn judge_thresholds(&mut self, thresholds: &[Threshold]) {
        let json = serde_json::to_value(&*self).unwrap_or_default();
        self.thresholds = super::thresholds::judge(thresholds, &json);
        self.thresholds_passed =
            self.thresholds.iter().all(|t| t.passed) && self.aborted_by_threshold.is_none();
        super::limit::rejudge_after_thresholds(self);
    }
}

/// Every window's counts together.
fn all_counts(m: &Measurements) -> PhaseCounts {
    m.counts.iter().fold(PhaseCounts::default(), |mut a, c| {
        a.add(c);
        a
    })
}

/// The run ended as planned: not interrupted, drained, not aborted, no fatal error.
fn complete(facts: &RunFacts, m: &Measurements) -> bool {
    !facts.interrupted
        && !facts.drain_timed_out
        && facts.aborted_by_threshold.is_none()
        && m.fatal.is_none()
}

/// The harness's own figures over the measured phases.
fn measured_harness(m: &Measurements) -> Option<crate::metrics::HarnessSummary> {
    let (from, to) = m.measured_span()?;
    crate::metrics::HarnessSummary::over(&m.harness, from, to)
}

impl ScenarioInfo {
    fn of(setup: &RunSetup) -> ScenarioInfo {
        ScenarioInfo {
            name: setup.name.clone(),
            description: setup.description.clone(),
            file: setup.file.clone(),
            seed: setup.seed,
        }
    }
}

impl DatabaseInfo {
    fn of(setup: &RunSetup, facts: &RunFacts) -> DatabaseInfo {
        DatabaseInfo {
            engine: setup.engine,
            provider: facts.provider.clone(),
            server_version: facts.server_version.clone(),
            description: facts.server_description.clone(),
            storage: facts.server_place.storage.clone(),
            route: facts.server_place.route.clone(),
            schema: facts.schema.clone(),
            settings: setup.database_settings.iter().cloned().collect(),
        }
    }
}

impl RunInfo {
    fn of(facts: &RunFacts, measured_window_s: f64, late_timeline_samples: u64) -> RunInfo {
        RunInfo {
            started_at: facts.started_at.clone(),
            ended_at: facts.ended_at.clone(),
            clock: "durations from CLOCK_MONOTONIC (µs); latencies of jobs start at their intended enqueue time".into(),
            measured_window_s,
            drain_s: facts.drain_s,
            drain_timed_out: facts.drain_timed_out,
            late_timeline_samples,
            group_forming: facts.group_forming.clone(),
        }
    }
}

impl QueueInfo {
    fn of(facts: &RunFacts) -> QueueInfo {
        QueueInfo {
            variant: facts.design.label.clone(),
            claim_sql: facts.design.claim_sql.clone(),
            claim_plan_start: facts.claim_plan_start.clone(),
            claim_plan_end: facts.claim_plan_end.clone(),
        }
    }
}

/// Percentiles at which the spectrum is read.
const SPECTRUM: [f64; 16] = [
    0.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99, 99.995, 99.999,
    99.9995, 100.0,
];

fn spectrum(set: &MetricSet) -> BTreeMap<String, Vec<(f64, f64)>> {
    Metric::ALL
        .iter()
        .filter(|m| !set.get(**m).is_empty())
        .map(|m| {
            let h = set.get(*m);
            let points = SPECTRUM
                .iter()
                .map(|p| (*p, h.value_at_quantile(p / 100.0) as f64 / 1000.0))
                .collect();
            (m.name().to_string(), points)
        })
        .collect()
}

/// The measured phases' backlog, second by second, judged against the rate they were
/// offered (or, in closed loop, the rate jobs were enqueued).
fn measured_backlog(setup: &RunSetup, m: &Measurements, t: &Throughput) -> Backlog {
    let measured: Vec<&str> = m
        .windows
        .iter()
        .filter(|w| w.measured)
        .map(|w| w.name.as_str())
        .collect();
    let rows: Vec<&TimelineRow> = m
        .timeline
        .iter()
        .filter(|r| measured.contains(&r.phase.as_str()))
        .collect();
    let rate = t.offered_per_s.unwrap_or(t.enqueued_per_s);
    Backlog::of(&rows, rate, setup.poll_interval.as_secs_f64())
}

impl JobCounts {
    fn of(all: &PhaseCounts, proof: &AccountingProof, ledger: &Ledger, prefilled: u64) -> Self {
        JobCounts {
            enqueued: proof.committed,
            prefilled,
            done: proof.done,
            completed: all.completed,
            finished_without_report: proof.finished_without_report,
            dead_lettered: proof.dead_lettered,
            failed_attempts: all.failed + ledger.failures_found_in_table,
            lost: proof.lost_total,
            lost_by_queue: proof.lost_by_queue,
            unrecorded_successes: proof.unrecorded_success_count,
            unfinished: proof.unfinished,
            duplicate_completions: proof.duplicate_total,
            enqueue_errors: all.enqueue_errors,
            worker_errors: all.worker_errors,
            sent_late: all.sent_late,
            dropped: all.dropped,
            reaped: all.reaped,
        }
    }
}

impl Metadata {
    fn of(setup: &RunSetup, facts: &RunFacts) -> Metadata {
        Metadata {
            scenario_sha256: setup.scenario_sha256.clone(),
            seed: setup.seed,
            tool_version: env!("CARGO_PKG_VERSION").into(),
            git_commit: env!("DBQ_BENCH_GIT_COMMIT").into(),
            server_version: facts.server_version.clone(),
            server_settings: facts.server_settings.clone(),
            cores: crate::metrics::harness::cores(),
            memory_bytes: crate::metrics::harness::memory_bytes(),
            started_at: facts.started_at.clone(),
            ended_at: facts.ended_at.clone(),
        }
    }
}
