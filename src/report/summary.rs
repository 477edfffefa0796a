//! `summary.json` (schema_version 1): every figure of a run, with what it measured.
//! Built once from the plan, the measurements and the accounting proof; every exporter and
//! the terminal summary read this and nothing else.

use super::article;
use super::dbstats::{self, DbStatsSummary};
use super::design::DesignRecord;
use super::faults::FaultSummary;
use super::thresholds::ThresholdResult;
use crate::accounting::AccountingProof;
use crate::backend::ClaimProbe;
use crate::metrics::{
    LatencyReport, Ledger, Measurements, Metric, MetricSet, PhaseCounts, TimelineRow, WindowKind,
};
use crate::scenario::Threshold;
use crate::scenario::{Plan, Rate};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const SCHEMA_VERSION: u32 = 1;

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
    /// Over the measured phases; see README "How to read the report" for each metric.
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
    pub verdict: Verdict,
    /// The harness's own figures over the measured phases (its timer's lateness, its CPU,
    /// the machine's), which tell a load generator limit from a queue that fell behind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<crate::metrics::HarnessSummary>,
    pub faults: FaultSummary,
    /// What the database reported during the run (sampled once per `sampler.interval`).
    pub db_stats: DbStatsSummary,
    /// The claim run once under `EXPLAIN (ANALYZE, BUFFERS)` (rolled back) at the start of
    /// every phase and after the drain.
    pub claim_probes: Vec<ClaimProbeSummary>,
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
    /// Database errors seen by producers and workers, by kind.
    pub errors: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimProbeSummary {
    pub label: String,
    /// Seconds since the load started.
    pub at_s: f64,
    /// Shared buffers the claim touched (hit + read).
    pub buffers: i64,
    pub probe: ClaimProbe,
}

/// What it takes to reproduce or compare the run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Metadata {
    /// SHA-256 of scenario.resolved.toml.
    pub scenario_sha256: String,
    pub seed: u64,
    pub tool_version: String,
    pub git_commit: String,
    pub postgres_version: String,
    /// Key server settings as the server reported them.
    pub postgres_settings: BTreeMap<String, String>,
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
    pub engine: crate::scenario::Engine,
    pub provider: String,
    pub server_version: String,
    pub description: String,
    /// The schema the run worked in.
    pub schema: String,
    pub settings: BTreeMap<String, String>,
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
}

#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct JobCounts {
    /// Jobs whose insert committed (prefilled ones included).
    pub enqueued: u64,
    pub prefilled: u64,
    /// `done` updates that committed, as workers reported them.
    pub completed: u64,
    /// Jobs that finished (done or dead_letter) without their worker reporting it: it died
    /// right after the commit. Settled from the table by the accounting proof.
    pub finished_without_report: u64,
    pub dead_lettered: u64,
    /// Failure updates that committed (each retry and each dead letter), those whose commit
    /// reply was lost included (settled from the table's `retry_count`).
    pub failed_attempts: u64,
    /// Committed jobs that vanished, or that the ledger and the table disagree on (union).
    pub lost: u64,
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

/// The producer fleet's connections: opened at the start, allowed, and used.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ProducerUse {
    /// Connections opened at the start (`producers.count`).
    pub count: u64,
    /// The most the fleet may open (`producers.max_count`).
    pub max_count: u64,
    /// The most it had open.
    pub connections: u64,
    /// The most inserts under way at once in the measured phases.
    pub inserts_in_flight: u64,
}

impl ProducerUse {
    fn of(plan: &Plan, all: &PhaseCounts, measured: &PhaseCounts) -> ProducerUse {
        ProducerUse {
            count: plan.producers.count as u64,
            max_count: plan.producers.max_count as u64,
            connections: all.producer_connections,
            inserts_in_flight: measured.inserts_in_flight,
        }
    }

    /// `4 connection(s) of 16 allowed, at most 3 insert(s) at once`.
    pub fn describe(&self) -> String {
        format!(
            "{} connection(s) of {} allowed, at most {} insert(s) at once",
            self.connections, self.max_count, self.inserts_in_flight
        )
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// Inserts committed per second of the measured window.
    pub enqueued_per_s: f64,
    /// `done` commits per second of the measured window.
    pub completed_per_s: f64,
    /// The offered rate averaged over the measured window (`None` for closed loop).
    pub offered_per_s: Option<f64>,
    pub window_s: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseSummary {
    pub name: String,
    pub kind: WindowKind,
    pub measured: bool,
    /// Seconds since the load started (negative for prefill).
    pub start_s: f64,
    pub duration_s: f64,
    /// Offered jobs/s, or "max"; none for prefill and drain.
    pub offered: Option<String>,
    pub jobs: PhaseCounts,
    pub throughput: Throughput,
    pub latency_ms: LatencyReport,
    /// For measured open-loop phases: producers kept their schedule and consumers kept up
    /// (the same rules as the verdict, applied to this phase).
    pub kept_up: Option<bool>,
    /// Seconds from the phase's start to its last finished job: shorter than the phase when
    /// the consumers ran out of work (a prefilled backlog drained before the phase ended).
    #[serde(default)]
    pub busy_s: Option<f64>,
    /// Completed jobs per second of `busy_s`: the consumers' rate while they had work.
    #[serde(default)]
    pub completed_per_busy_s: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueInfo {
    pub variant: String,
    pub claim_sql: String,
    /// `EXPLAIN` of the claim before the first phase and after the drain.
    pub claim_plan_start: Vec<String>,
    pub claim_plan_end: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub completed_per_s: f64,
    pub seed_reference_per_s: f64,
    /// completed_per_s / seed_reference_per_s.
    pub multiple_of_reference: f64,
    /// Producers kept their schedule (at most 1% of jobs sent late).
    pub producers_kept_schedule: bool,
    /// Consumers kept up: over the measured window, neither the backlog (sampled from the
    /// database) grew by more than the tolerance nor the completion gap (jobs enqueued minus
    /// jobs finished) by more than the tolerance plus the jobs in flight.
    pub consumers_kept_up: bool,
    /// max(10 jobs, 2% of the jobs enqueued in the window).
    pub tolerance_jobs: i64,
    /// Jobs in the system at any moment by Little's law (completed rate × p50 end-to-end):
    /// those in flight when the window closed, which the completion gap may include.
    #[serde(default)]
    pub in_flight_jobs: f64,
    pub backlog_growth: Option<i64>,
    pub completion_gap: i64,
    pub queue_depth_start: Option<i64>,
    pub queue_depth_end: Option<i64>,
    pub kept_up: bool,
    /// Kept up, limited by the load generator, or did not keep up.
    #[serde(default)]
    pub state: VerdictState,
    pub text: String,
    /// The capacity result the text cites (`run --capacity DIR`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<article::CapacityCitation>,
}

/// The verdict in one word. `LoadGeneratorLimited`: the producers missed their schedule
/// while the consumers kept up and the harness's own timer was late as often (its machine
/// was saturated), so the shortfall is the harness's, not the queue's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictState {
    #[default]
    KeptUp,
    LoadGeneratorLimited,
    DidNotKeepUp,
}

impl VerdictState {
    /// The verdict's opening words.
    pub fn headline(self) -> &'static str {
        match self {
            VerdictState::KeptUp => "Kept up",
            VerdictState::LoadGeneratorLimited => "Limited by the load generator",
            VerdictState::DidNotKeepUp => "Did not keep up",
        }
    }
}

/// What `run` knows besides the measurements, for the summary.
pub struct RunFacts {
    pub provider: String,
    pub server_version: String,
    pub server_description: String,
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
}

fn secs(us: u64) -> f64 {
    us as f64 / 1e6
}

fn per_s(n: u64, window_s: f64) -> f64 {
    if window_s > 0.0 {
        ((n as f64 / window_s) * 10.0).round() / 10.0
    } else {
        0.0
    }
}

impl Summary {
    /// Why the run is incomplete (`None` when it is complete): the one wording every format
    /// uses.
    pub fn incomplete_because(&self) -> Option<String> {
        if self.complete {
            return None;
        }
        Some(if let Some(f) = &self.fatal_error {
            format!("stopped by a permanent database error: {f}")
        } else if let Some(t) = &self.aborted_by_threshold {
            format!("stopped early by --abort-on-fail: {t}")
        } else if self.interrupted {
            "interrupted".into()
        } else {
            "the drain timed out".into()
        })
    }

    /// Holds a capacity result against the claim in the verdict (`run --capacity DIR`).
    pub fn cite_capacity(&mut self, citation: article::CapacityCitation) {
        let sentence = citation.sentence(&self.design, self.verdict.completed_per_s);
        self.verdict.text.push_str(&sentence);
        self.verdict.capacity = Some(citation);
    }

    pub fn build(
        plan: &Plan,
        m: &Measurements,
        ledger: &Ledger,
        proof: AccountingProof,
        facts: RunFacts,
    ) -> Summary {
        let Phases {
            phases,
            measured_counts,
            measured_metrics,
            throughput,
        } = Phases::of(plan, m, &facts);
        let window_s = throughput.window_s;
        let all = all_counts(m);
        let jobs = JobCounts::of(&all, &proof, ledger, facts.prefilled);
        let faults = FaultSummary::build(m, &all, ledger, &proof, plan.consumers.claim_mode);
        let scheduled = measured_metrics.get(Metric::ScheduleLag).len();
        let harness = measured_span(m)
            .and_then(|(from, to)| crate::metrics::HarnessSummary::over(&m.harness, from, to));
        let producers = ProducerUse::of(plan, &all, &measured_counts);
        let pace = ProducerPace::of(&measured_counts, producers);
        let latency_ms = LatencyReport::of(&measured_metrics);
        let mut verdict = verdict(
            measured_depths(m),
            &throughput,
            &measured_counts,
            latency_ms.end_to_end.p50,
            scheduled,
            harness.as_ref(),
            &pace,
        );
        name_the_first_phase_behind(&mut verdict, &phases);
        let phase_names: Vec<String> = phases.iter().map(|p| p.name.clone()).collect();
        let claim_probes = claim_probe_summaries(m);
        let meta = Metadata::of(plan, &facts);
        let db_stats = dbstats::summarize(&dbstats::rows(m), &phase_names);
        let cost = measured_cost(&db_stats, &phases);
        Summary {
            schema_version: SCHEMA_VERSION,
            complete: complete(&facts, m),
            fatal_error: m.fatal.clone(),
            interrupted: facts.interrupted,
            tool: ToolInfo {
                name: "dbq-bench".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            scenario: ScenarioInfo::of(plan),
            database: DatabaseInfo::of(plan, &facts),
            run: RunInfo::of(&facts, window_s, m.late_samples),
            jobs,
            producers,
            throughput,
            bystander: super::bystander::BystanderSummary::of(
                plan,
                facts.bystander_quiet,
                &latency_ms,
                &measured_counts,
            ),
            latency_ms,
            cost,
            phases,
            accounting: proof,
            design: DesignRecord::of(plan, &facts.design),
            queue: QueueInfo::of(&facts),
            verdict,
            harness,
            faults,
            db_stats,
            claim_probes,
            latency_spectrum_ms: spectrum(&measured_metrics),
            thresholds: Vec::new(),
            thresholds_passed: true,
            aborted_by_threshold: facts.aborted_by_threshold.clone(),
            meta,
            errors: m.errors.clone(),
        }
    }

    /// Judges the plan's thresholds on this summary and records the results.
    pub fn judge_thresholds(&mut self, thresholds: &[Threshold]) {
        let json = serde_json::to_value(&*self).unwrap_or_default();
        self.thresholds = super::thresholds::judge(thresholds, &json);
        self.thresholds_passed =
            self.thresholds.iter().all(|t| t.passed) && self.aborted_by_threshold.is_none();
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

/// What each job cost the database over the measured phases.
fn measured_cost(db: &DbStatsSummary, phases: &[PhaseSummary]) -> super::cost::JobCost {
    let finished: Vec<(&str, u64)> = phases
        .iter()
        .filter(|p| p.measured)
        .map(|p| (p.name.as_str(), p.jobs.completed + p.jobs.dead_lettered))
        .collect();
    super::cost::JobCost::of(db, &finished)
}

impl ScenarioInfo {
    fn of(plan: &Plan) -> ScenarioInfo {
        ScenarioInfo {
            name: plan.name.clone(),
            description: plan.description.clone(),
            file: plan.source.clone(),
            seed: plan.seed,
        }
    }
}

impl DatabaseInfo {
    fn of(plan: &Plan, facts: &RunFacts) -> DatabaseInfo {
        DatabaseInfo {
            engine: plan.database.engine,
            provider: facts.provider.clone(),
            server_version: facts.server_version.clone(),
            description: facts.server_description.clone(),
            schema: facts.schema.clone(),
            settings: plan.database.settings.iter().cloned().collect(),
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

/// The same rules as the verdict, for one phase.
/// `scheduled`: the jobs the window's schedule intended (late ones are counted by their
/// intended time too, while `enqueued` counts commits, which a stalled producer pushes into
/// later windows).
fn phase_kept_up(c: &PhaseCounts, scheduled: u64) -> bool {
    let tolerance = ((c.enqueued as f64 * 0.02) as i64).max(10);
    let gap = c.enqueued as i64 - (c.completed + c.dead_lettered) as i64;
    (c.sent_late + c.dropped) as f64 <= 0.01 * (scheduled + c.dropped).max(1) as f64
        && gap <= tolerance
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

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Total memory from /proc/meminfo (0 when unknown).
fn memory_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))?
                .split_whitespace()
                .nth(1)?
                .parse::<u64>()
                .ok()
        })
        .map_or(0, |kb| kb * 1024)
}

/// Why the producers' late jobs were late: a job due while every producer connection the
/// fleet may open was busy goes out late however fast the queue drains. When at least half
/// of the late jobs were late that way, more connections (`producers.max_count`) would have
/// sent them on time: the load generator's limit, not the queue's, set the pace.
struct ProducerPace {
    late: u64,
    late_behind: u64,
    used: ProducerUse,
}

impl ProducerPace {
    fn of(counts: &PhaseCounts, used: ProducerUse) -> ProducerPace {
        // A dropped job was due while every producer was still busy: behind, by definition.
        ProducerPace {
            late: counts.sent_late + counts.dropped,
            late_behind: counts.sent_late_behind + counts.dropped,
            used,
        }
    }

    fn too_few(&self) -> bool {
        self.late > 0 && 2 * self.late_behind >= self.late
    }

    fn behind_pct(&self) -> f64 {
        100.0 * self.late_behind as f64 / self.late.max(1) as f64
    }
}

/// From the start of the first measured phase to the end of the last, µs on the run clock.
fn measured_span(m: &Measurements) -> Option<(u64, u64)> {
    let measured = m.windows.iter().filter(|w| w.measured);
    let from = measured.clone().map(|w| w.start_us).min()?;
    let to = measured.map(|w| w.end_us).max()?;
    Some((from, to))
}

/// Queue depth in the first and last timeline second of the measured phases.
fn measured_depths(m: &Measurements) -> (Option<i64>, Option<i64>) {
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
    let first = rows.iter().find_map(|r| r.queue_depth);
    let last = rows.iter().rev().find_map(|r| r.queue_depth);
    (first, last)
}

/// The run's windows as phase summaries, and the measured ones added up.
struct Phases {
    phases: Vec<PhaseSummary>,
    measured_counts: PhaseCounts,
    measured_metrics: MetricSet,
    /// Over the measured phases together.
    throughput: Throughput,
}

impl Phases {
    fn of(plan: &Plan, m: &Measurements, facts: &RunFacts) -> Phases {
        let mut phases = Vec::new();
        let mut measured_counts = PhaseCounts::default();
        let mut measured_metrics = MetricSet::default();
        let mut window_s = 0.0;
        let mut offered_jobs = 0.0;
        let mut closed_loop = false;
        let mut phase_plans = plan.phases.iter();
        let load_start_us = m.load_start_us();
        for (i, w) in m.windows.iter().enumerate() {
            if w.kind == WindowKind::Prefill && facts.prefilled == 0 {
                continue;
            }
            let phase_plan = (w.kind == WindowKind::Phase)
                .then(|| phase_plans.next())
                .flatten();
            let end = if w.end_us == u64::MAX {
                w.start_us + (facts.drain_s * 1e6) as u64
            } else {
                w.end_us
            };
            let duration_s = secs(end.saturating_sub(w.start_us));
            let counts = m.counts[i];
            let offered = phase_plan.map(|p| match p.rate {
                Rate::PerSecond(r) => format!("{r}"),
                Rate::Max => "max".to_string(),
            });
            if w.measured {
                measured_counts.add(&counts);
                measured_metrics.add(&m.metrics[i]);
                window_s += duration_s;
                match phase_plan.map(|p| p.rate) {
                    Some(Rate::PerSecond(r)) => offered_jobs += r * duration_s,
                    _ => closed_loop = true,
                }
            }
            let offered_per_s = match phase_plan.map(|p| p.rate) {
                Some(Rate::PerSecond(r)) => Some(r),
                _ => None,
            };
            let last = m.last_finished_us.get(i).copied().unwrap_or(0);
            let busy_s = (last > w.start_us).then(|| (last - w.start_us) as f64 / 1e6);
            phases.push(PhaseSummary {
                name: w.name.clone(),
                kind: w.kind,
                measured: w.measured,
                start_s: (w.start_us as f64 - load_start_us as f64) / 1e6,
                duration_s,
                offered,
                jobs: counts,
                throughput: Throughput {
                    enqueued_per_s: per_s(counts.enqueued, duration_s),
                    completed_per_s: per_s(counts.completed, duration_s),
                    offered_per_s,
                    window_s: duration_s,
                },
                latency_ms: LatencyReport::of(&m.metrics[i]),
                kept_up: (w.measured && offered_per_s.is_some())
                    .then(|| phase_kept_up(&counts, m.metrics[i].get(Metric::ScheduleLag).len())),
                busy_s,
                completed_per_busy_s: busy_s.map(|b| per_s(counts.completed, b)),
            });
        }
        let throughput = Throughput {
            enqueued_per_s: per_s(measured_counts.enqueued, window_s),
            completed_per_s: per_s(measured_counts.completed, window_s),
            offered_per_s: (!closed_loop && window_s > 0.0)
                .then(|| (offered_jobs / window_s * 10.0).round() / 10.0),
            window_s,
        };
        Phases {
            phases,
            measured_counts,
            measured_metrics,
            throughput,
        }
    }
}

impl JobCounts {
    fn of(all: &PhaseCounts, proof: &AccountingProof, ledger: &Ledger, prefilled: u64) -> Self {
        JobCounts {
            enqueued: proof.committed,
            prefilled,
            completed: all.completed,
            finished_without_report: proof.finished_without_report,
            dead_lettered: all.dead_lettered,
            failed_attempts: all.failed + ledger.failures_found_in_table,
            lost: proof.lost_total,
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

/// A run that did not keep up names the first phase that fell behind.
fn name_the_first_phase_behind(verdict: &mut Verdict, phases: &[PhaseSummary]) {
    let first_behind = phases.iter().find(|p| p.kept_up == Some(false));
    if verdict.state == VerdictState::DidNotKeepUp
        && let Some(p) = first_behind
    {
        verdict.text.push_str(&format!(
            " The first phase that did not keep up: \"{}\" at {} jobs/s offered ({:.0} completed/s).",
            p.name,
            p.offered.as_deref().unwrap_or("?"),
            p.throughput.completed_per_s
        ));
    }
}

/// The claim probes, timed from the start of the load.
fn claim_probe_summaries(m: &Measurements) -> Vec<ClaimProbeSummary> {
    let load_start = m.load_start_us();
    m.claim_probes
        .iter()
        .map(|c| ClaimProbeSummary {
            label: c.label.clone(),
            at_s: (c.at_us as f64 - load_start as f64) / 1e6,
            buffers: c.probe.buffers_hit + c.probe.buffers_read,
            probe: c.probe.clone(),
        })
        .collect()
}

impl Metadata {
    fn of(plan: &Plan, facts: &RunFacts) -> Metadata {
        Metadata {
            scenario_sha256: sha256_hex(plan.resolved_toml().as_bytes()),
            seed: plan.seed,
            tool_version: env!("CARGO_PKG_VERSION").into(),
            git_commit: env!("DBQ_BENCH_GIT_COMMIT").into(),
            postgres_version: facts.server_version.clone(),
            postgres_settings: facts.server_settings.clone(),
            cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
            memory_bytes: memory_bytes(),
            started_at: facts.started_at.clone(),
            ended_at: facts.ended_at.clone(),
        }
    }
}

/// How far the backlog, or the enqueued-minus-finished gap, may grow over a window and still
/// count as keeping up: max(10 jobs, 2% of the window's jobs).
fn gap_tolerance(enqueued: u64) -> f64 {
    (enqueued as f64 * 0.02).max(10.0)
}

/// The jobs in the system at any moment, by Little's law: completed rate × p50 end-to-end
/// latency. Those still in flight when a window closes are not a backlog.
pub fn jobs_in_flight(completed_per_s: f64, end_to_end_p50_ms: f64) -> f64 {
    completed_per_s * end_to_end_p50_ms / 1000.0
}

/// Whether completions kept up with what was sent over a window (the verdict's and the
/// capacity search's rule): the gap between jobs enqueued and jobs finished (done or dead
/// letter) within [`gap_tolerance`] plus the jobs in flight ([`jobs_in_flight`]).
pub fn completions_kept_up(enqueued: u64, finished: u64, in_flight: f64) -> bool {
    enqueued as f64 - finished as f64 <= gap_tolerance(enqueued) + in_flight
}

/// The verdict's opening: its headline, and for a run that did not simply keep up, why, and
/// whose limit it was.
fn verdict_head(
    state: VerdictState,
    harness: Option<&crate::metrics::HarnessSummary>,
    producers: &ProducerPace,
    late: &str,
    reasons: &[String],
) -> String {
    let harness_saturated = harness.is_some_and(|h| h.saturated());
    match (state, harness) {
        (VerdictState::KeptUp, _) => state.headline().to_string(),
        (VerdictState::LoadGeneratorLimited, Some(h)) if producers.too_few() => format!(
            "{}: producers missed their schedule ({late}) while the consumers kept up; {:.0}% of the late jobs were due while every producer connection was busy ({}), so more connections (producers.max_count) would have sent them on time ({})",
            state.headline(),
            producers.behind_pct(),
            producers.used.describe(),
            h.describe()
        ),
        (VerdictState::LoadGeneratorLimited, Some(h)) => format!(
            "{}: producers missed their schedule ({late}) while the consumers kept up, and {}; the queue kept up with what was sent, so this is not the queue's limit",
            state.headline(),
            h.describe()
        ),
        (VerdictState::DidNotKeepUp, Some(h)) if harness_saturated => format!(
            "{}: {}, while the harness itself was saturated ({}): its simulated workers share its CPU, so part of the shortfall may be its own",
            state.headline(),
            reasons.join(" and "),
            h.describe()
        ),
        _ => format!("{}: {}", state.headline(), reasons.join(" and ")),
    }
}

/// `(start, end)`: the backlog in the first and last second of the measured phases;
/// `scheduled`: jobs the measured phases' schedules intended, the denominator of the late
/// share (both counted by intended time).
fn verdict(
    (start, end): (Option<i64>, Option<i64>),
    t: &Throughput,
    counts: &PhaseCounts,
    end_to_end_p50_ms: f64,
    scheduled: u64,
    harness: Option<&crate::metrics::HarnessSummary>,
    producers: &ProducerPace,
) -> Verdict {
    let multiple = t.completed_per_s / article::FEW_HUNDRED_PER_S;
    // Jobs never sent (their phase ended first) are as late as jobs can be.
    let late_pct = 100.0 * (counts.sent_late + counts.dropped) as f64
        / (scheduled + counts.dropped).max(1) as f64;
    let producers_kept_schedule = late_pct <= 1.0;
    let late = match counts.dropped {
        0 => format!("{late_pct:.1}% of jobs sent late"),
        n => format!(
            "{late_pct:.1}% of jobs sent late or not at all: {n} never sent before their phase ended"
        ),
    };
    let backlog_growth = start.zip(end).map(|(s, e)| e - s);
    let finished = counts.completed + counts.dead_lettered;
    let completion_gap = counts.enqueued as i64 - finished as i64;
    let in_flight = jobs_in_flight(t.completed_per_s, end_to_end_p50_ms);
    let tolerance_jobs = gap_tolerance(counts.enqueued) as i64;
    let consumers_kept_up = completions_kept_up(counts.enqueued, finished, in_flight)
        && backlog_growth.is_none_or(|g| g <= tolerance_jobs);
    let kept_up = producers_kept_schedule && consumers_kept_up;
    let harness_saturated = harness.is_some_and(|h| h.saturated());
    let state = if kept_up {
        VerdictState::KeptUp
    } else if consumers_kept_up && (harness_saturated || producers.too_few()) {
        VerdictState::LoadGeneratorLimited
    } else {
        VerdictState::DidNotKeepUp
    };

    let offered = t
        .offered_per_s
        .map_or("max (closed loop)".to_string(), |r| {
            format!("{r:.0} jobs/s")
        });
    let depth = match (start, end) {
        (Some(s), Some(e)) => format!("backlog {s} → {e} jobs"),
        _ => "backlog not sampled".to_string(),
    };
    let mut reasons = Vec::new();
    if !producers_kept_schedule {
        reasons.push(format!("producers missed their schedule ({late})"));
    }
    if !consumers_kept_up {
        reasons.push(format!(
            "consumers fell behind ({completion_gap} more jobs enqueued than finished)"
        ));
    }
    let head = verdict_head(state, harness, producers, &late, &reasons);
    let text = format!(
        "{head}. {:.0} jobs/s completed over {:.0} s measured = {}; offered {offered}; {depth}; {late_pct:.1}% of jobs sent late.",
        t.completed_per_s,
        t.window_s,
        article::multiple(t.completed_per_s),
    );
    Verdict {
        completed_per_s: t.completed_per_s,
        seed_reference_per_s: article::FEW_HUNDRED_PER_S,
        multiple_of_reference: (multiple * 100.0).round() / 100.0,
        producers_kept_schedule,
        consumers_kept_up,
        tolerance_jobs,
        in_flight_jobs: (in_flight * 10.0).round() / 10.0,
        backlog_growth,
        completion_gap,
        queue_depth_start: start,
        queue_depth_end: end,
        kept_up,
        state,
        text,
        capacity: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_in_flight_at_the_window_end_are_not_a_backlog() {
        // 44 jobs/s with a 100 ms median end to end: about 4 jobs are in the system at any
        // moment, so a gap of 11 over 176 jobs is within max(10, 2%) plus those.
        let in_flight = jobs_in_flight(44.0, 100.0);
        assert!((in_flight - 4.4).abs() < 1e-9);
        assert!(completions_kept_up(176, 165, in_flight));
        assert!(!completions_kept_up(176, 165, 0.0));
        // A real backlog is still one: 50 jobs behind is far more than 10 + 4.4.
        assert!(!completions_kept_up(176, 126, in_flight));
        // The tolerance grows with the window: 2% of 10,000 jobs.
        assert!(completions_kept_up(10_000, 9_800, 0.0));
        assert!(!completions_kept_up(10_000, 9_799, 0.0));
    }

    /// Consumers 100 jobs behind over a 4 s window, with the harness's timer late as given.
    fn behind_with_timer_late(timer_late_pct: f64) -> Verdict {
        let counts = PhaseCounts {
            enqueued: 200,
            completed: 100,
            ..PhaseCounts::default()
        };
        let t = Throughput {
            enqueued_per_s: 50.0,
            completed_per_s: 25.0,
            offered_per_s: Some(50.0),
            window_s: 4.0,
        };
        let harness = crate::metrics::HarnessSummary {
            timer_late_pct,
            timer_max_lag_ms: 300.0,
            machine_cores: 2,
            ..Default::default()
        };
        let pace = ProducerPace::of(&counts, ProducerUse::default());
        verdict(
            (Some(0), Some(100)),
            &t,
            &counts,
            200.0,
            200,
            Some(&harness),
            &pace,
        )
    }

    #[test]
    fn a_queue_behind_on_a_saturated_harness_says_the_harness_may_share_the_blame() {
        let v = behind_with_timer_late(40.0);
        assert_eq!(v.state, VerdictState::DidNotKeepUp);
        assert!(!v.consumers_kept_up);
        assert!(
            v.text
                .contains("consumers fell behind (100 more jobs enqueued than finished)")
                && v.text.contains("the harness itself was saturated")
                && v.text.contains("timer woke late 40.0% of the time"),
            "{}",
            v.text
        );
        let calm = behind_with_timer_late(0.2);
        assert_eq!(calm.state, VerdictState::DidNotKeepUp);
        assert!(!calm.text.contains("saturated"), "{}", calm.text);
    }
}
