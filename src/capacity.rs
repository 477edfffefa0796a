//! `dbq-bench capacity`: the highest offered rate a queue design sustains on this server
//! while a service objective holds, and the curve of latency against offered load.
//!
//! The search offers a rate for one *step* (a short warm-up, then a measured window), judges
//! the step, and picks the next rate: doubling until a step breaks the objective, then
//! bisecting between the last good and the first bad rate until they are within the
//! precision, or the time budget is spent. Each step is a run of its own in a fresh schema of
//! one shared server, so a failed step's backlog cannot leak into the next one's figures.

use crate::db::{self, Server};
use crate::error::{Failure, InputError};
use crate::report::Summary;
use crate::report::svg::{Series, TimeChart, escape};
use crate::run::{RunOptions, run_on};
use crate::scenario::{EnvDefaults, Overrides, Plan, load_plan};
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How the search runs (`[capacity]` in the scenario, or flags).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Search {
    /// The first rate offered, jobs/s.
    pub start_per_s: f64,
    /// Never offer more than this.
    pub max_per_s: f64,
    /// Stop bisecting when the last good and first bad rate are within this share.
    pub precision: f64,
    pub warmup: Duration,
    pub measure: Duration,
    /// Stop searching after this long (the answer is then the best rate found so far).
    pub budget: Duration,
    /// The objective: threshold conditions judged on each step's measured window, besides
    /// "completions keep up and producers keep their schedule".
    pub slo: BTreeMap<String, String>,
}

impl Search {
    /// The scenario's `[capacity]` with `--slo` conditions on top, checked.
    pub fn from_section(
        section: Option<&crate::scenario::CapacitySection>,
        slo_flags: &[String],
        source: &str,
    ) -> Result<Search, InputError> {
        let mut s = Search::default();
        let err =
            |key: &str, reason: String| InputError::new(source, format!("capacity.{key}"), reason);
        if let Some(c) = section {
            s.start_per_s = c.start_rate.unwrap_or(s.start_per_s);
            s.max_per_s = c.max_rate.unwrap_or(s.max_per_s);
            s.precision = c.precision.unwrap_or(s.precision);
            s.warmup = c.warmup.map_or(s.warmup, |d| d.0);
            s.measure = c.measure.map_or(s.measure, |d| d.0);
            s.budget = c.budget.map_or(s.budget, |d| d.0);
            if !c.slo.is_empty() {
                for (k, v) in &c.slo {
                    crate::scenario::thresholds::parse(k, v, Some("step"))
                        .map_err(|reason| err(&format!("slo.{k}"), reason))?;
                }
                s.slo = c.slo.clone();
            }
        }
        for flag in slo_flags {
            let source = format!("--slo {flag}");
            let (k, v) = flag.split_once('=').ok_or_else(|| {
                InputError::whole(
                    &source,
                    "expected metric=condition, e.g. end_to_end.p99=<250ms",
                )
            })?;
            let (k, v) = (k.trim(), v.trim());
            crate::scenario::thresholds::parse(k, v, Some("step"))
                .map_err(|reason| InputError::whole(&source, reason))?;
            s.slo.insert(k.to_string(), v.to_string());
        }
        if !(s.start_per_s.is_finite() && (1.0..=1_000_000.0).contains(&s.start_per_s)) {
            return Err(err(
                "start_rate",
                format!(
                    "must be between 1 and 1000000 jobs/s, got {}",
                    s.start_per_s
                ),
            ));
        }
        if !(s.max_per_s.is_finite() && s.max_per_s >= s.start_per_s && s.max_per_s <= 1_000_000.0)
        {
            return Err(err(
                "max_rate",
                format!(
                    "must be between start_rate and 1000000 jobs/s, got {}",
                    s.max_per_s
                ),
            ));
        }
        if !(0.01..=1.0).contains(&s.precision) {
            return Err(err(
                "precision",
                format!("must be between 0.01 and 1, got {}", s.precision),
            ));
        }
        if s.measure < Duration::from_secs(1) || s.measure > Duration::from_secs(3600) {
            return Err(err("measure", "must be between 1s and 1h".into()));
        }
        if s.warmup > Duration::from_secs(600) {
            return Err(err("warmup", "must be at most 10m".into()));
        }
        if s.budget < s.measure || s.budget > Duration::from_secs(24 * 3600) {
            return Err(err(
                "budget",
                "must be at least one measured window and at most 24h".into(),
            ));
        }
        Ok(s)
    }
}

impl Default for Search {
    fn default() -> Self {
        Search {
            start_per_s: 100.0,
            max_per_s: 100_000.0,
            precision: 0.10,
            warmup: Duration::from_secs(3),
            measure: Duration::from_secs(10),
            budget: Duration::from_secs(300),
            slo: BTreeMap::from([
                ("end_to_end.p99".to_string(), "< 500ms".to_string()),
                ("jobs.enqueue_errors".to_string(), "== 0".to_string()),
                ("jobs.worker_errors".to_string(), "== 0".to_string()),
            ]),
        }
    }
}

/// One step of the search, judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub offered_per_s: f64,
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
    pub dir: PathBuf,
}

/// What `capacity.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Capacity {
    pub schema_version: u32,
    pub scenario: String,
    pub variant: String,
    /// The highest offered rate whose step met the objective (`None`: not even the first).
    pub max_sustainable_per_s: Option<f64>,
    /// The lowest rate whose step broke it (`None`: none did, up to `max_per_s`).
    pub first_failing_per_s: Option<f64>,
    /// The rate at which p99 starts climbing: the first step whose p99 is more than twice
    /// the lowest step's.
    pub knee_per_s: Option<f64>,
    /// The search stopped because the load generator could not send the rate offered.
    pub load_generator_limited: bool,
    pub budget_spent: bool,
    /// Ctrl-C stopped the search: the answer is from the steps that finished.
    #[serde(default)]
    pub interrupted: bool,
    pub search: Search,
    pub steps: Vec<Step>,
    /// One line for humans (Markdown).
    pub summary: String,
}

/// What the article calls "a few hundred per second".
const ARTICLE_RATE: f64 = 300.0;

/// A capacity search's request.
pub struct CapacityRequest {
    pub scenario: PathBuf,
    pub overrides: Overrides,
    pub env: EnvDefaults,
    pub search: Search,
    pub out_dir: PathBuf,
    pub status: bool,
}

impl CapacityRequest {
    /// The plan of a step at `rate`: the scenario with its phases replaced by a warm-up and a
    /// measured window carrying the objective, and no prefill.
    pub fn step_plan(&self, rate: f64) -> Result<Plan, InputError> {
        let slo: Vec<String> = self
            .search
            .slo
            .iter()
            .map(|(k, v)| format!("{} = {}", toml_string(k), toml_string(v)))
            .collect();
        let phases = format!(
            "phases=[{{ name = \"warmup\", duration = \"{}ms\", rate = {rate}, measured = false }}, \
             {{ name = \"step\", duration = \"{}ms\", rate = {rate}, thresholds = {{ {} }} }}]",
            self.search.warmup.as_millis(),
            self.search.measure.as_millis(),
            slo.join(", ")
        );
        let mut overrides = self.overrides.clone();
        overrides.sets.extend([
            phases,
            "producers.prefill=0".into(),
            "thresholds={}".into(),
            "drain.timeout=\"10s\"".into(),
        ]);
        load_plan(&self.scenario, &overrides, &self.env)
    }
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// Runs the search and writes `capacity.json`, `capacity.md` and `capacity.html`.
pub async fn run(
    request: &CapacityRequest,
    shutdown: &CancellationToken,
) -> Result<Capacity, Failure> {
    let first = request.step_plan(request.search.start_per_s)?;
    std::fs::create_dir_all(&request.out_dir)
        .with_context(|| format!("creating {}", request.out_dir.display()))?;
    let server = Arc::new(db::provision(&first.database).await?);
    if request.status {
        for line in &server.skipped {
            eprintln!("dbq-bench: {line}");
        }
        eprintln!("dbq-bench: capacity server: {}", server.description);
    }
    let result = search(request, &server, shutdown).await;
    if let Ok(server) = Arc::try_unwrap(server)
        && let Err(e) = server.teardown().await
    {
        eprintln!("dbq-bench: warning: teardown: {e:#}");
    }
    let (steps, end) = result?;
    let capacity = conclude(request, &first, steps, end);
    write(&capacity, &request.out_dir)
        .map_err(|e| Failure::Run(e.context("writing the capacity results")))?;
    Ok(capacity)
}

/// Why the search ended early, if it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Done,
    BudgetSpent,
    Interrupted,
}

/// Ramp, then bisect. Returns the steps in the order run, and how the search ended.
async fn search(
    request: &CapacityRequest,
    server: &Arc<Server>,
    shutdown: &CancellationToken,
) -> Result<(Vec<Step>, End), Failure> {
    let s = &request.search;
    let started = Instant::now();
    let mut steps: Vec<Step> = Vec::new();
    let (mut good, mut bad): (Option<f64>, Option<f64>) = (None, None);
    let mut rate = s.start_per_s;
    loop {
        if shutdown.is_cancelled() {
            return Ok((steps, End::Interrupted));
        }
        if started.elapsed() >= s.budget {
            return Ok((steps, End::BudgetSpent));
        }
        let step = match run_step(request, server, steps.len(), rate, shutdown).await {
            // An interrupted step is not judged; the finished ones still answer.
            Err(Failure::Interrupted) => return Ok((steps, End::Interrupted)),
            Ok(_) if shutdown.is_cancelled() => return Ok((steps, End::Interrupted)),
            other => other?,
        };
        let (passed, limited) = (step.passed, step.load_generator_limited);
        steps.push(step);
        if limited {
            // The harness cannot send more: searching higher would measure the harness.
            return Ok((steps, End::Done));
        }
        if passed {
            good = Some(rate);
        } else {
            bad = Some(rate);
        }
        rate = match (good, bad) {
            (Some(g), None) if g * 2.0 <= s.max_per_s => g * 2.0,
            (Some(g), None) if g < s.max_per_s => s.max_per_s,
            (Some(_), None) => return Ok((steps, End::Done)),
            (None, Some(b)) if b / 2.0 >= 1.0 && steps.len() < 3 => b / 2.0,
            (None, Some(_)) => return Ok((steps, End::Done)),
            (Some(g), Some(b)) if (b - g) / g > s.precision => ((g + b) / 2.0).round(),
            (Some(_), Some(_)) => return Ok((steps, End::Done)),
            (None, None) => unreachable!("a step either passed or failed"),
        };
    }
}

async fn run_step(
    request: &CapacityRequest,
    server: &Arc<Server>,
    index: usize,
    rate: f64,
    shutdown: &CancellationToken,
) -> Result<Step, Failure> {
    let plan = request.step_plan(rate)?;
    let dir =
        request
            .out_dir
            .join("steps")
            .join(format!("{:02}-{}-per-s", index + 1, rate.round()));
    if request.status {
        eprintln!(
            "dbq-bench: capacity step {}: {} jobs/s offered",
            index + 1,
            rate.round()
        );
    }
    let opts = RunOptions {
        out_dir: Some(dir.clone()),
        ..Default::default()
    };
    let outcome = run_on(&plan, &opts, server, shutdown).await?;
    let step = judge(&outcome.results.summary, rate, dir);
    if request.status {
        eprintln!(
            "dbq-bench:   {:.0} completed/s, e2e p50 {:.1} ms, p99 {:.1} ms: {}",
            step.completed_per_s,
            step.e2e_p50_ms,
            step.e2e_p99_ms,
            if step.passed {
                "met the objective".to_string()
            } else {
                step.why.join("; ")
            }
        );
    }
    Ok(step)
}

/// Judges a step's measured window: its thresholds (the objective), whether the producers
/// delivered the offered rate, and whether completions kept up with what they sent. Late
/// inserts are not a failure by themselves: latency counts from each job's intended time,
/// so lateness already shows in the e2e objective.
pub fn judge(s: &Summary, rate: f64, dir: PathBuf) -> Step {
    let phase = s.phases.iter().find(|p| p.name == "step");
    let mut why: Vec<String> = s
        .thresholds
        .iter()
        .filter(|t| !t.passed)
        .map(|t| {
            format!(
                "{} {} (was {})",
                t.metric,
                t.condition,
                t.actual.map_or("n/a".into(), |a| format!("{a:.1}"))
            )
        })
        .collect();
    let objective_met = why.is_empty();
    let Some(p) = phase else {
        why.push("the step did not run its measured window".into());
        return Step {
            offered_per_s: rate,
            completed_per_s: 0.0,
            e2e_p50_ms: f64::NAN,
            e2e_p99_ms: f64::NAN,
            backlog_slope_per_s: f64::NAN,
            sent_late_pct: 0.0,
            passed: false,
            why,
            load_generator_limited: false,
            dir,
        };
    };
    let c = &p.jobs;
    let window = p.duration_s.max(1e-9);
    let gap = c.enqueued as f64 - (c.completed + c.dead_lettered) as f64;
    // Jobs still in flight when the window closes are not a backlog: by Little's law about
    // rate × latency of them are in the system at any moment.
    let in_flight = p.throughput.completed_per_s * p.latency_ms.end_to_end.p50 / 1000.0;
    let consumers_kept_up = gap <= (c.enqueued as f64 * 0.02).max(10.0) + in_flight;
    let sent_share = c.enqueued as f64 / (rate * window).max(1.0);
    let delivered = sent_share >= 0.97;
    if !consumers_kept_up {
        why.push(format!("backlog grew by {:.0} jobs/s", gap / window));
    }
    if !delivered {
        why.push(format!(
            "producers sent only {:.0}% of the offered jobs",
            sent_share * 100.0
        ));
    }
    if !s.accounting.ok {
        why.push("the accounting proof failed".into());
    }
    Step {
        offered_per_s: rate,
        completed_per_s: p.throughput.completed_per_s,
        e2e_p50_ms: p.latency_ms.end_to_end.p50,
        e2e_p99_ms: p.latency_ms.end_to_end.p99,
        backlog_slope_per_s: gap / window,
        sent_late_pct: 100.0 * c.sent_late as f64 / p.latency_ms.schedule_lag.count.max(1) as f64,
        passed: why.is_empty(),
        // Only the producers fell short: the consumers finished what was sent in time.
        load_generator_limited: !delivered && consumers_kept_up && objective_met,
        why,
        dir,
    }
}

/// The answer from the steps.
fn conclude(request: &CapacityRequest, plan: &Plan, steps: Vec<Step>, end: End) -> Capacity {
    let max = steps
        .iter()
        .filter(|s| s.passed)
        .map(|s| s.offered_per_s)
        .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))));
    let first_failing = steps
        .iter()
        .filter(|s| !s.passed)
        .map(|s| s.offered_per_s)
        .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.min(r))));
    let mut by_rate: Vec<&Step> = steps.iter().filter(|s| s.e2e_p99_ms.is_finite()).collect();
    by_rate.sort_by(|a, b| a.offered_per_s.total_cmp(&b.offered_per_s));
    let knee = by_rate.first().and_then(|low| {
        by_rate
            .iter()
            .find(|s| s.e2e_p99_ms > 2.0 * low.e2e_p99_ms.max(1.0))
            .map(|s| s.offered_per_s)
    });
    let limited = steps.iter().any(|s| s.load_generator_limited);
    let variant = plan.queue.variant.name.as_str().to_string();
    let objective = request
        .search
        .slo
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ");
    let summary = match max {
        Some(m) if limited => format!(
            "The {variant} design sustained {m:.0} jobs/s ({objective}) before the load generator fell behind its schedule: the harness, not the queue, was the limit, so the queue's capacity is at least that ({:.1}× the article's \"few hundred\").",
            m / ARTICLE_RATE
        ),
        Some(m) => format!(
            "The {variant} design sustains {m:.0} jobs/s with {objective} on this server, {:.1}× the article's \"few hundred\" (taken as {ARTICLE_RATE:.0}/s){}.",
            m / ARTICLE_RATE,
            first_failing.map_or(String::new(), |f| format!(
                "; {f:.0} jobs/s broke the objective"
            ))
        ),
        None => format!(
            "The {variant} design did not meet the objective ({objective}) even at {:.0} jobs/s.",
            request.search.start_per_s
        ),
    };
    Capacity {
        schema_version: 1,
        scenario: request.scenario.display().to_string(),
        variant,
        max_sustainable_per_s: max,
        first_failing_per_s: first_failing,
        knee_per_s: knee,
        load_generator_limited: limited,
        budget_spent: end == End::BudgetSpent,
        interrupted: end == End::Interrupted,
        search: request.search.clone(),
        steps,
        summary,
    }
}

fn write(c: &Capacity, dir: &Path) -> anyhow::Result<()> {
    std::fs::write(dir.join("capacity.json"), serde_json::to_string_pretty(c)?)?;
    std::fs::write(dir.join("capacity.md"), markdown(c))?;
    std::fs::write(dir.join("capacity.html"), html(c))?;
    Ok(())
}

/// The steps as a table, then the answer.
pub fn markdown(c: &Capacity) -> String {
    let mut md = format!("# dbq-bench capacity: {}\n\n{}\n\n", c.variant, c.summary);
    md.push_str("| step | offered/s | completed/s | e2e p50 ms | e2e p99 ms | backlog slope/s | late % | objective |\n|---|---|---|---|---|---|---|---|\n");
    for (i, s) in c.steps.iter().enumerate() {
        md.push_str(&format!(
            "| {} | {:.0} | {:.0} | {:.1} | {:.1} | {:.0} | {:.1} | {} |\n",
            i + 1,
            s.offered_per_s,
            s.completed_per_s,
            s.e2e_p50_ms,
            s.e2e_p99_ms,
            s.backlog_slope_per_s,
            s.sent_late_pct,
            if s.passed {
                "met".to_string()
            } else {
                format!("broken: {}", s.why.join("; "))
            }
        ));
    }
    if let Some(k) = c.knee_per_s {
        md.push_str(&format!(
            "\nThe knee (p99 more than twice the lowest step's): {k:.0} jobs/s.\n"
        ));
    }
    if c.budget_spent {
        md.push_str("\nThe time budget ran out before the search reached its precision.\n");
    }
    if c.interrupted {
        md.push_str("\nInterrupted (Ctrl-C): the answer is from the steps that finished.\n");
    }
    md
}

fn html(c: &Capacity) -> String {
    let mut by_rate = c.steps.clone();
    by_rate.sort_by(|a, b| a.offered_per_s.total_cmp(&b.offered_per_s));
    let hi = by_rate.last().map_or(1.0, |s| s.offered_per_s);
    let series = |name: &str, f: fn(&Step) -> f64| Series {
        name: name.into(),
        points: by_rate
            .iter()
            .map(|s| (s.offered_per_s, f(s)))
            .filter(|p| p.1.is_finite())
            .collect(),
    };
    let chart = |title: &str, y_label: &str, series: Vec<Series>| {
        TimeChart {
            title,
            x_label: "offered jobs/s",
            y_label,
            series,
            bands: &[],
            markers: &[],
            x_range: (0.0, hi),
        }
        .render()
    };
    let latency = chart(
        "End-to-end latency against offered load",
        "ms",
        vec![
            series("p50", |s| s.e2e_p50_ms),
            series("p99", |s| s.e2e_p99_ms),
        ],
    );
    let rate = chart(
        "Completed against offered (jobs/s)",
        "jobs/s",
        vec![
            series("completed", |s| s.completed_per_s),
            series("offered", |s| s.offered_per_s),
        ],
    );
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>dbq-bench capacity</title>\
         <style>body{{font-family:sans-serif;margin:2em;max-width:1100px}}</style></head><body>\
         <h1>dbq-bench capacity: {}</h1><p>{}</p><figure>{latency}</figure><figure>{rate}</figure>\
         <p>x axis: offered jobs/s. Each point is one step (warm-up, then a measured window).</p>\
         <pre>{}</pre></body></html>\n",
        escape(&c.variant),
        escape(&c.summary),
        escape(&markdown(c))
    )
}
