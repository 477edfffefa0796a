//! `dbq-bench capacity`: the highest offered rate a queue design sustains on this server
//! while a service objective holds, and the curve of latency against offered load.
//!
//! The search offers a rate for one *step* (a short warm-up, then a measured window), judges
//! the step, and picks the next rate: doubling until a step breaks the objective, then
//! bisecting between the last good and the first bad rate until they are within the
//! precision, or the time budget is spent. Each step is a run of its own in a fresh schema of
//! one shared server, so a failed step's backlog cannot leak into the next one's figures.

use crate::error::{Failure, InputError};
use crate::report::design::DesignRecord;
use crate::report::limit::Limit;
use crate::report::{Summary, article, artifact, summary, verdict};

mod answer;
pub mod confirm;
mod document;
pub mod hold;
pub mod limit;
mod options;
mod search;
pub mod stability;
pub mod upset;

pub use options::Search;

use crate::run::{self, RunOptions, Session};
use crate::scenario::{FirstVacuum, HumanDuration, PhaseSection, Plan, PlanChange, Rate};
use crate::status::Status;
use anyhow::Context;
use search::{End, Searched, best_rate, judge_phase, search_on};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// One step of the search, judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub offered_per_s: f64,
    /// Consumers (workers) during the step.
    pub consumers: u32,
    pub completed_per_s: f64,
    pub e2e_p50_ms: f64,
    pub e2e_p99_ms: f64,
    /// How fast the measured window's backlog grew: (enqueued − finished) / window, jobs/s.
    pub backlog_slope_per_s: f64,
    /// Share of inserts sent more than `late_after` after their intended time (shown, not
    /// judged: the e2e objective counts from the intended time).
    pub sent_late_pct: f64,
    pub passed: bool,
    /// Which part of the objective failed (empty when it passed).
    pub why: Vec<String>,
    /// The producers, not the queue, missed: they could not send the offered rate, while
    /// the consumers kept up with what was sent and the objective held.
    pub load_generator_limited: bool,
    /// What the database did meanwhile: the evidence for why a rate held or not.
    #[serde(default)]
    pub upkeep: Upkeep,
    /// What limited the window, with its evidence and the figures it was read from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<Limit>,
    /// It broke the objective while the load machine stalled: not the queue's failure, so
    /// it is measured again rather than judged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disturbed: bool,
    pub dir: PathBuf,
}

/// What the database did during a window: claim latency, vacuum runs, dead tuples.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Upkeep {
    pub claim_p50_ms: f64,
    pub autovacuums: i64,
    pub vacuums: i64,
    /// The most dead tuples a sample of the window saw.
    pub dead_tuples_max: i64,
    /// Jobs waiting at the window's last sample.
    pub pending_end: i64,
    /// The bystander's p99 in the window, ms (`None` without one).
    #[serde(default)]
    pub bystander_p99_ms: Option<f64>,
    /// Write-ahead log written per completed job in the window, bytes.
    #[serde(default)]
    pub wal_bytes_per_job: Option<f64>,
    /// The workers' statements scanned the queue table sequentially in the window: it
    /// measured that plan, not the queue (`table_reads` in the step's summary.json).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub table_scanned: bool,
}

impl Step {
    /// An end-to-end figure of the window, "unknown" when no job finished in it (a window
    /// whose jobs all waited has no latency to show, not one of 0.0 ms).
    pub fn e2e_ms(&self, v: f64) -> String {
        match self.completed_per_s > 0.0 && v.is_finite() {
            true => format!("{v:.1}"),
            false => "unknown".into(),
        }
    }

    /// One line: its figures, whether it met the objective and what limited it.
    pub fn line(&self) -> String {
        let u = &self.upkeep;
        let limit = match (&self.limit, self.disturbed) {
            (Some(l), true) => format!("; DISTURBED, measured again: {}", l.evidence),
            (Some(l), false) => format!("; limit: {}", l.kind.label()),
            (None, _) => String::new(),
        };
        format!(
            "{:.0} completed/s, e2e p50 {} ms, p99 {} ms, claim p50 {:.2} ms, {} autovacuum(s), dead tuples up to {}{}{}: {}{limit}",
            self.completed_per_s,
            self.e2e_ms(self.e2e_p50_ms),
            self.e2e_ms(self.e2e_p99_ms),
            u.claim_p50_ms,
            u.autovacuums,
            u.dead_tuples_max,
            u.bystander_p99_ms
                .map_or(String::new(), |b| format!(", bystander p99 {b:.1} ms")),
            if u.table_scanned {
                ", the workers' claim scanned the table"
            } else {
                ""
            },
            if self.passed {
                "met the objective".to_string()
            } else {
                self.why.join("; ")
            }
        )
    }
}

/// What `capacity.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Capacity {
    pub schema_version: u32,
    pub scenario: String,
    pub variant: String,
    /// The design measured, whole (absent in results of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub design: Option<DesignRecord>,
    /// The server's engine and release (`PostgreSQL 17`; absent in results of older
    /// versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The answer: the rate that held on a fresh queue through the confirmation; without
    /// one (`--quick`, a consumer-count search) the search's figure, `confirmed` false.
    /// `None`: no rate met the objective (or none held).
    pub max_sustainable_per_s: Option<f64>,
    /// The answer was held on a fresh queue for the confirmation's whole length.
    #[serde(default)]
    pub confirmed: bool,
    /// The search's figure: the highest offered rate whose step met the objective, in short
    /// steps on one queue that has been through vacuum cycles (a capacity between vacuums).
    #[serde(default)]
    pub between_vacuums_per_s: Option<f64>,
    /// The lowest rate whose step broke it (`None`: none did, up to `max_per_s`).
    pub first_failing_per_s: Option<f64>,
    /// The rate at which p99 starts climbing: the first step whose p99 is more than twice
    /// the lowest step's.
    pub knee_per_s: Option<f64>,
    /// The search stopped because the load generator could not send the rate offered.
    pub load_generator_limited: bool,
    /// The load machine stalled in a window that broke and again each time it was measured
    /// again: the answer is the last rate that held cleanly.
    #[serde(default)]
    pub load_machine_limited: bool,
    /// What limited the answer: read in the window that broke just above it (or in its own
    /// window when none did), with its evidence and action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<limit::AnswerLimit>,
    pub budget_spent: bool,
    /// Ctrl-C stopped the search: the answer is from the steps that finished.
    #[serde(default)]
    pub interrupted: bool,
    /// A step's backlog did not drain within two steps' time, so the search stopped: later
    /// steps on the same queue would have measured it.
    #[serde(default)]
    pub backlog_left: bool,
    /// A consumer-count search: the fewest consumers that met the objective at
    /// `search.consumers_for_rate` (`None`: not even `search.max_consumers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_consumers: Option<u32>,
    pub search: Search,
    pub steps: Vec<Step>,
    /// The search's answer held on fresh queues (absent when it did not run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<confirm::Confirmation>,
    /// `capacity --at`: how many of the fresh queues the rate held on (its tries are the
    /// confirmation's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<AtRate>,
    /// With the standard upset: the stable capacity, the vulnerable band above it and the
    /// effect that sustained the backlog there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stability: Option<stability::Stability>,
    /// One line for humans (Markdown).
    pub summary: String,
}

/// `capacity --at`: one rate tried on fresh queues.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AtRate {
    pub rate: f64,
    /// Fresh queues asked for.
    pub runs: u32,
    /// Fresh queues it held on (the share is the answer; it holds when it held on all).
    pub held: u32,
}

/// A capacity search's request.
pub struct CapacityRequest {
    /// The scenario as loaded; each step replaces its phases.
    pub plan: Plan,
    pub search: Search,
    pub out_dir: PathBuf,
    pub status: Status,
    /// Show the live progress line during the confirmation's long runs.
    pub progress_bar: bool,
}

/// One step's settings: the offered rate and, in a consumer-count search, the consumers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Setting {
    pub rate: f64,
    pub consumers: Option<u32>,
}

impl CapacityRequest {
    /// The plan of a step: the scenario with its phases replaced by a warm-up and a measured
    /// window carrying the objective, and no prefill. The drain may take as long as two
    /// steps: a broken step's backlog is worked off before the next step starts.
    pub fn step_plan(&self, at: Setting) -> Result<Plan, InputError> {
        let rate = Some(Rate::PerSecond(at.rate));
        let phase = |name: &str, duration, measured, thresholds| PhaseSection {
            name: name.into(),
            duration: HumanDuration(duration),
            rate,
            measured,
            faults: Vec::new(),
            thresholds,
        };
        let phases = vec![
            phase("warmup", self.search.warmup, false, BTreeMap::new()),
            phase("step", self.search.measure, true, self.search.slo.clone()),
        ];
        let drain = (2 * (self.search.warmup + self.search.measure)).max(Duration::from_secs(30));
        let mut changes = vec![
            PlanChange::Phases(phases),
            PlanChange::Prefill(0),
            PlanChange::RunThresholds(BTreeMap::new()),
            PlanChange::DrainTimeout(drain),
        ];
        changes.extend(at.consumers.map(PlanChange::Consumers));
        self.plan.changed(changes)
    }

    /// The same request with the scenario's consumers set to `n`, its runs written under
    /// `n-consumers/`.
    fn with_consumers(&self, n: u32) -> Result<CapacityRequest, InputError> {
        Ok(CapacityRequest {
            plan: self.plan.changed(vec![PlanChange::Consumers(n)])?,
            search: self.search.clone(),
            out_dir: self.out_dir.join(format!("{n}-consumers")),
            status: self.status.clone(),
            progress_bar: self.progress_bar,
        })
    }

    /// The first step's setting; a consumer-count search starts where Little's law puts
    /// it: the rate × the handler's mean time is the number of workers busy on average,
    /// and a quarter more keeps them below 80 % busy.
    fn first(&self) -> Setting {
        match self.search.consumers_for_rate {
            Some(rate) => Setting {
                rate,
                consumers: Some(littles_law(
                    rate,
                    self.plan.consumers.handler.mean(),
                    self.search.max_consumers,
                )),
            },
            None => Setting {
                rate: self.search.start_per_s,
                consumers: None,
            },
        }
    }
}

/// Workers for `rate` jobs/s of `handler` each: 1.25 × rate × handler, at least 1 and at
/// most `max`.
fn littles_law(rate: f64, handler: Duration, max: u32) -> u32 {
    let busy = rate * handler.as_secs_f64();
    ((1.25 * busy).ceil() as u32).clamp(1, max)
}

/// Runs the search on one queue installed once and confirms its answer on fresh queues of
/// the same server (or, with `--at`, tries one rate on fresh queues), and writes
/// `capacity.json`, `capacity.md` and `capacity.html`.
pub async fn run(
    request: &CapacityRequest,
    shutdown: &CancellationToken,
) -> Result<Capacity, Failure> {
    let first = request.step_plan(request.first())?;
    std::fs::create_dir_all(&request.out_dir)
        .with_context(|| format!("creating {}", request.out_dir.display()))?;
    let status = &request.status;
    let server = run::provision(&first, status).await?;
    let release = crate::version::release_of(first.database.engine.label(), &server.version);
    let capacity = match request.search.at_rate {
        Some(rate) => at_rate(request, &first, &server, rate, shutdown).await,
        None => search_and_confirm(request, &first, &server, shutdown).await,
    };
    run::release(server, false, status).await;
    let mut capacity = capacity?;
    capacity.server = Some(release);
    write(&capacity, &request.out_dir)
        .map_err(|e| Failure::Run(e.context("writing the capacity results")))?;
    Ok(capacity)
}

/// The search, then its answer confirmed.
async fn search_and_confirm(
    request: &CapacityRequest,
    first: &Plan,
    server: &std::sync::Arc<crate::provider::Server>,
    shutdown: &CancellationToken,
) -> Result<Capacity, Failure> {
    let searched = search_on(request, first, server, shutdown).await?;
    let confirmation = confirm_the_answer(request, server, &searched, shutdown).await?;
    let Searched {
        steps, end, design, ..
    } = searched;
    Ok(answer::conclude(
        request,
        first,
        design,
        steps,
        end,
        confirmation,
    ))
}

/// `--at`: whole confirmations at `rate` on fresh queues, no search.
async fn at_rate(
    request: &CapacityRequest,
    first: &Plan,
    server: &std::sync::Arc<crate::provider::Server>,
    rate: f64,
    shutdown: &CancellationToken,
) -> Result<Capacity, Failure> {
    let facts = server
        .endpoint()
        .describe()
        .await
        .context("reading server settings")?;
    let first_vacuum = request.search.first_vacuum.unwrap_or(FirstVacuum::Whenever);
    let Some(schedule) = confirm::schedule(request.search.confirm, first_vacuum, &facts.settings)
    else {
        return Err(Failure::Run(anyhow::anyhow!(
            "--at runs whole confirmations, which confirm = \"off\" leaves out"
        )));
    };
    let runs = (rate, request.search.at_runs);
    let (confirmation, design) = confirm::at(request, server, runs, schedule, shutdown).await?;
    let interrupted = shutdown.is_cancelled();
    Ok(answer::at_rate(
        request,
        first,
        design,
        confirmation,
        interrupted,
    ))
}

/// Confirms a rate search's answer, unless the confirmation is off, the search was
/// interrupted, or it found no rate; a consumer-count search's answer is confirmed at its
/// rate with that many consumers, as `--at` would (one command answers "how many workers,
/// and does it carry it?").
async fn confirm_the_answer(
    request: &CapacityRequest,
    server: &std::sync::Arc<crate::provider::Server>,
    s: &Searched,
    shutdown: &CancellationToken,
) -> Result<Option<confirm::Confirmation>, Failure> {
    let found = best_rate(&s.steps);
    let rate_search = request.search.consumers_for_rate.is_none();
    let first_vacuum = request.search.first_vacuum.unwrap_or(FirstVacuum::Whenever);
    let schedule = confirm::schedule(request.search.confirm, first_vacuum, &s.server_settings);
    match (found, schedule) {
        (Some(rate), Some(schedule)) if rate_search && s.end != End::Interrupted => {
            let c = confirm::confirm(request, server, rate, schedule, shutdown).await?;
            Ok(Some(c))
        }
        (Some(rate), Some(schedule)) if s.end != End::Interrupted => {
            let passed = s.steps.iter().filter(|s| s.passed);
            let Some(fewest) = passed.map(|s| s.consumers).min() else {
                return Ok(None);
            };
            confirm_the_count(request, server, (rate, fewest), schedule, shutdown).await
        }
        _ => Ok(None),
    }
}

/// A consumer-count search's answer confirmed at its rate: the count the steps found, and
/// where its whole confirmations do not hold (a 10 s step can pass a count that falls behind
/// over minutes), the next count up (× 1.25, at least one more), at most three counts. The
/// confirmation of the last count tried is the answer's.
async fn confirm_the_count(
    request: &CapacityRequest,
    server: &std::sync::Arc<crate::provider::Server>,
    (rate, fewest): (f64, u32),
    schedule: confirm::Schedule,
    shutdown: &CancellationToken,
) -> Result<Option<confirm::Confirmation>, Failure> {
    let runs = request.search.stable_runs;
    let mut count = fewest;
    for tried in 1..=3 {
        let at_count = request.with_consumers(count)?;
        let on = (rate, runs);
        let (c, _) = confirm::at(&at_count, server, on, schedule.clone(), shutdown).await?;
        let held = c.tries.iter().filter(|t| t.held).count() as u32 == runs;
        let max = request.search.max_consumers;
        if held || tried == 3 || count >= max || shutdown.is_cancelled() {
            return Ok(Some(c));
        }
        request.status.line(&format!(
            "{count} consumer(s) did not hold {rate:.0} jobs/s through the confirmation; trying more"
        ));
        count = ((f64::from(count) * 1.25).ceil() as u32)
            .max(count + 1)
            .min(max);
    }
    Ok(None)
}

impl Upkeep {
    fn of(s: &Summary, p: &summary::PhaseSummary) -> Upkeep {
        let db = s.db_stats.per_phase.iter().find(|d| d.phase == p.name);
        Upkeep {
            claim_p50_ms: p.latency_ms.claim.p50,
            autovacuums: db.map_or(0, |d| d.autovacuums),
            vacuums: db.map_or(0, |d| d.vacuums),
            dead_tuples_max: db.map_or(0, |d| d.dead_tuples_max),
            pending_end: db.map_or(0, |d| d.pending_end),
            bystander_p99_ms: (p.latency_ms.bystander.count > 0)
                .then_some(p.latency_ms.bystander.p99),
            wal_bytes_per_job: crate::report::cost::wal_bytes_per_job(
                &s.db_stats,
                &[(&p.name, p.jobs.completed + p.jobs.dead_lettered)],
            ),
            table_scanned: s
                .table_reads
                .as_ref()
                .and_then(|r| r.scanned.as_ref())
                .is_some_and(|sc| sc.overlaps(p.start_s, p.start_s + p.duration_s)),
        }
    }
}

/// Renders a capacity search's results in `dir` again from its capacity.json (`report
/// DIR`); returns the answer's sentence.
pub fn render_again(dir: &Path) -> anyhow::Result<String> {
    use anyhow::Context;
    let path = dir.join("capacity.json");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let c: Capacity =
        serde_json::from_str(&text).with_context(|| format!("reading {}", path.display()))?;
    write(&c, dir)?;
    Ok(c.summary)
}

fn write(c: &Capacity, dir: &Path) -> anyhow::Result<()> {
    artifact::write(
        dir,
        c,
        &[
            &artifact::Json("capacity.json"),
            &artifact::Markdown("capacity.md"),
            &artifact::Html("capacity.html"),
        ],
    )
    .map(drop)
}

/// Reads a capacity result (`DIR` or `DIR/capacity.json`) for a run's verdict to cite.
pub fn citation(path: &Path) -> Result<article::CapacityCitation, String> {
    let file = if path.is_dir() {
        path.join("capacity.json")
    } else {
        path.to_path_buf()
    };
    let text = std::fs::read_to_string(&file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let c: Capacity = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not a capacity result: {e}", file.display()))?;
    if c.search.consumers_for_rate.is_some() {
        return Err(format!(
            "{} is a consumer-count search; a rate search (without consumers_for_rate) finds the capacity",
            file.display()
        ));
    }
    let max = c.max_sustainable_per_s.ok_or_else(|| {
        format!(
            "{} has no sustainable rate (no step met the objective, or no rate held)",
            file.display()
        )
    })?;
    let horizon = match (&c.confirmation, &c.at) {
        (Some(k), Some(at)) => format!(
            "held on {} of {} fresh queues for {} each",
            at.held,
            at.runs,
            HumanDuration(Duration::from_secs_f64(k.held_for_s))
        ),
        (Some(k), None) if c.confirmed => format!(
            "held for {} on a fresh queue",
            HumanDuration(Duration::from_secs_f64(k.held_for_s))
        ),
        _ => format!(
            "unconfirmed: {} steps between vacuums",
            HumanDuration(c.search.measure)
        ),
    };
    Ok(article::CapacityCitation {
        source: file.display().to_string(),
        // A result of an older version recorded its variant only.
        design: c.design.unwrap_or(DesignRecord {
            variant: c.variant,
            ..DesignRecord::default()
        }),
        max_sustainable_per_s: max,
        objective: objective_text(&c.search),
        horizon,
    })
}

/// The objective as one phrase: `end_to_end.p99 < 500ms, jobs.worker_errors == 0`.
pub(crate) fn objective_text(search: &Search) -> String {
    search
        .slo
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}
