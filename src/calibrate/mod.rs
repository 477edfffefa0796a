//! `dbq-bench calibrate`: is this load machine fast enough? Runs pgbench and the harness on
//! the same server, the same prefilled seed table and the same transaction (the seed's claim
//! and its success update, 0 ms handler), in turn at each connection count and `repeats`
//! times, and prints the medians of their jobs/s and CPU per job side by side, with the
//! spread of the ratios.
//!
//! pgbench is written in C and runs the same statements on one connection per client: when
//! the harness drains as fast with no more CPU per job, the harness is not what limits a
//! measurement on this machine. Last, the harness alone on an in-memory queue (`ceiling`):
//! the most it can move here at all.

pub mod fresh;
pub mod pgbench;

pub use fresh::{FreshCheck, FreshRequest};

use crate::backend::Backend;
use crate::ceiling::{self, Ceiling};
use crate::error::{Failure, InputError};
use crate::provider::Server;
use crate::report::artifact::{self, Document};
use crate::report::page::{self, Callout, Page, Section, Tone};
use crate::run::{self, RunOptions, Session};
use crate::scenario::{
    DurationDist, HandlerSection, HumanDuration, PhaseSection, Plan, PlanChange, Rate, VariantName,
};
use crate::status::Status;
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The transaction pgbench runs: the seed's claim (`src/backend/postgres/seed/claim.sql`, its
/// `RETURNING id, type, payload` included, as the worker receives them) and its success
/// update (`complete.sql`, `$1` as pgbench's `:id`), in one transaction, as the seed's worker
/// runs them.
///
/// `\aset` leaves `id` as it was when the claim finds nothing (the script sets it to 0
/// first), so a queue that runs dry does not abort pgbench; jobs are counted from the table.
fn pgbench_script() -> String {
    let claim = include_str!("../backend/postgres/seed/claim.sql").trim_end();
    let complete = include_str!("../backend/postgres/seed/complete.sql")
        .trim_end()
        .replace("$1", ":id");
    format!("\\set id 0\nBEGIN;\n{claim} \\aset\n{complete};\nCOMMIT;\n")
}

pub struct CalibrateRequest {
    /// The scenario whose database settings are used (its load is replaced).
    pub plan: Plan,
    pub connections: Vec<u32>,
    pub duration: Duration,
    pub prefill: u64,
    /// Runs of each tool at each connection count, alternated (pgbench, harness, pgbench, …).
    pub repeats: u32,
    pub pgbench: PathBuf,
    pub out_dir: PathBuf,
    pub status: Status,
}

/// One connection count, both tools: medians over the repeats, and the spread of the ratios.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub connections: u32,
    pub pgbench_per_s: f64,
    pub harness_per_s: f64,
    /// harness / pgbench jobs/s, median of the repeats (≥ 1: the harness drains at least as
    /// fast), and its lowest and highest repeat.
    pub ratio: f64,
    pub ratio_range: [f64; 2],
    /// CPU (user + system) per job finished, µs, of each client process.
    pub pgbench_cpu_us_per_job: f64,
    pub harness_cpu_us_per_job: f64,
    /// harness / pgbench CPU per job, median of the repeats (≤ 1: the harness is no
    /// costlier), and its lowest and highest repeat.
    pub cpu_ratio: f64,
    pub cpu_ratio_range: [f64; 2],
    /// The harness without its instrumentation in the database (no completion audit, the
    /// sampler only at phase boundaries), jobs/s, and what the instrumentation cost: 1 −
    /// instrumented / bare, median of the repeats, and its lowest and highest repeat.
    #[serde(default)]
    pub bare_per_s: f64,
    #[serde(default)]
    pub instrumentation_cost: f64,
    #[serde(default)]
    pub instrumentation_cost_range: [f64; 2],
}

impl Row {
    /// The harness drained at least as fast as pgbench with no more CPU per job (medians).
    pub fn at_parity(&self) -> bool {
        self.ratio >= 1.0 && self.cpu_ratio <= 1.0
    }

    /// The row of `samples`, the repeats at one connection count (at least one).
    fn of(connections: u32, samples: &[Sample]) -> Row {
        let pick = |f: fn(&Sample) -> f64| samples.iter().map(f).collect::<Vec<f64>>();
        let ratios = pick(|s| s.harness_per_s / s.pgbench_per_s.max(1e-9));
        let cpu_ratios = pick(|s| s.harness_cpu_us / s.pgbench_cpu_us.max(1e-9));
        let costs = pick(|s| 1.0 - s.harness_per_s / s.bare_per_s.max(1e-9));
        Row {
            connections,
            pgbench_per_s: median(pick(|s| s.pgbench_per_s)),
            harness_per_s: median(pick(|s| s.harness_per_s)),
            ratio_range: range(&ratios),
            ratio: median(ratios),
            pgbench_cpu_us_per_job: median(pick(|s| s.pgbench_cpu_us)),
            harness_cpu_us_per_job: median(pick(|s| s.harness_cpu_us)),
            cpu_ratio_range: range(&cpu_ratios),
            cpu_ratio: median(cpu_ratios),
            bare_per_s: median(pick(|s| s.bare_per_s)),
            instrumentation_cost_range: range(&costs),
            instrumentation_cost: median(costs),
        }
    }
}

/// One repeat at one connection count: each tool's jobs/s and CPU µs per job.
struct Sample {
    pgbench_per_s: f64,
    harness_per_s: f64,
    bare_per_s: f64,
    pgbench_cpu_us: f64,
    harness_cpu_us: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn range(v: &[f64]) -> [f64; 2] {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    [lo, hi]
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub server: String,
    pub duration_s: f64,
    pub prefill: u64,
    pub repeats: u32,
    pub rows: Vec<Row>,
    /// The harness alone on an in-memory queue, for the same duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling: Option<Ceiling>,
}

impl CalibrateRequest {
    /// The harness's plan at `connections`: the seed with a prefilled backlog, no producers,
    /// `connections` workers with a 0 ms handler, one measured phase of `duration`, and no
    /// drain after it (only the measured phase counts: the rest of the prefill is not worth
    /// draining; the run then ends "drain timed out", its jobs unfinished, none lost).
    fn plan(&self, connections: u32) -> Result<Plan, InputError> {
        let load = PhaseSection {
            name: "load".into(),
            duration: HumanDuration(self.duration),
            rate: Some(Rate::PerSecond(0.0)),
            measured: true,
            faults: Vec::new(),
            thresholds: BTreeMap::new(),
        };
        self.plan.changed([
            PlanChange::Variant(VariantName::Seed),
            PlanChange::Prefill(self.prefill),
            PlanChange::Consumers(connections),
            PlanChange::Handler(HandlerSection {
                duration: DurationDist::Fixed(HumanDuration::from_millis(0)),
                error_rate: 0.0,
                cpu_bound: false,
                slow: None,
            }),
            PlanChange::Phases(vec![load]),
            PlanChange::RunThresholds(BTreeMap::new()),
            PlanChange::DrainTimeout(Duration::from_secs(1)),
        ])
    }
}

/// Runs both tools at every connection count and writes `calibrate.json` and `.md`.
pub async fn run(
    request: &CalibrateRequest,
    shutdown: &CancellationToken,
) -> Result<Calibration, Failure> {
    let handler = &request.plan.consumers.handler;
    if handler.slow.is_some() {
        return Err(Failure::Input(InputError::new(
            &request.plan.source,
            "consumers.handler",
            "calibrate runs a 0 ms handler on both sides, as pgbench has none: remove the handler's slow runs (or calibrate --fresh-table, which runs a fixed handler as pgbench's \\sleep)".to_string(),
        )));
    }
    let first = request.plan(request.connections[0])?;
    let engine = first.database.engine;
    if !engine.supports().calibrate {
        return Err(Failure::Input(InputError::new(
            &first.source,
            "database.engine",
            format!(
                "calibrate compares the harness with pgbench, PostgreSQL's tool; {} has none here",
                engine.label()
            ),
        )));
    }
    std::fs::create_dir_all(&request.out_dir)
        .with_context(|| format!("creating {}", request.out_dir.display()))?;
    let server = run::provision(&first, &request.status).await?;
    let result = measure_all(request, &server, shutdown).await;
    run::release(server, false, &request.status).await;
    let rows = result?;
    request
        .status
        .line("calibrate: the harness alone, on an in-memory queue…");
    let alone = ceiling::plan(request.duration, 4);
    let ceiling = ceiling::measure(&alone, &request.out_dir.join("ceiling"), shutdown).await?;
    let calibration = Calibration {
        server: first.database.provider.as_str().into(),
        duration_s: request.duration.as_secs_f64(),
        prefill: request.prefill,
        repeats: request.repeats,
        rows,
        ceiling: Some(ceiling),
    };
    artifact::write(
        &request.out_dir,
        &calibration,
        &[
            &artifact::Json("calibrate.json"),
            &artifact::Markdown("calibrate.md"),
            &artifact::Html("calibrate.html"),
        ],
    )
    .context("writing the calibration")?;
    Ok(calibration)
}

async fn measure_all(
    request: &CalibrateRequest,
    server: &Arc<Server>,
    shutdown: &CancellationToken,
) -> Result<Vec<Row>, Failure> {
    let mut rows = Vec::new();
    for &c in &request.connections {
        let mut samples = Vec::new();
        for repeat in 1..=request.repeats {
            samples.push(measure_once(request, server, shutdown, c, repeat).await?);
        }
        rows.push(Row::of(c, &samples));
    }
    Ok(rows)
}

/// pgbench, then the harness, at `connections`, each on a freshly prefilled table.
async fn measure_once(
    request: &CalibrateRequest,
    server: &Arc<Server>,
    shutdown: &CancellationToken,
    connections: u32,
    repeat: u32,
) -> Result<Sample, Failure> {
    let c = connections;
    let plan = request.plan(c)?;
    let say = |tool: &str| {
        request.status.line(&format!(
            "calibrate: {c} connection(s), run {repeat} of {}: {tool}…",
            request.repeats
        ))
    };
    say("pgbench");
    let quiet = RunOptions::default();
    let session = Session::set_up(&plan, &quiet, server, shutdown).await?;
    let pgbench = run_pgbench(request, &**session.backend(), c).await;
    session.tear_down(false, &request.status).await;
    let (pg_jobs, pg_cpu) = pgbench.map_err(Failure::Run)?;
    if shutdown.is_cancelled() {
        return Err(Failure::Interrupted);
    }
    say("dbq-bench");
    let tag = format!("{c}-{repeat}");
    let s = harness_run(request, server, shutdown, &plan, &format!("harness-{tag}")).await?;
    say("dbq-bench without its instrumentation");
    let bare = request.plan(c)?.changed([PlanChange::Uninstrumented])?;
    let b = harness_run(request, server, shutdown, &bare, &format!("bare-{tag}")).await?;
    // The harness's CPU over its measured phase (from its own monitor), per job finished
    // in it: the drain, the proof and the report after the load are not load generation.
    let cores = s
        .harness
        .as_ref()
        .and_then(|h| h.process_cores)
        .unwrap_or(f64::NAN);
    let finished = s.throughput.completed_per_s * s.throughput.window_s;
    Ok(Sample {
        pgbench_per_s: pg_jobs as f64 / request.duration.as_secs_f64(),
        harness_per_s: s.throughput.completed_per_s,
        bare_per_s: b.throughput.completed_per_s,
        pgbench_cpu_us: pg_cpu / pg_jobs.max(1) as f64 * 1e6,
        harness_cpu_us: cores * s.throughput.window_s / finished.max(1.0) * 1e6,
    })
}

/// One harness run of `plan` on a freshly prefilled table, its results in `name`.
async fn harness_run(
    request: &CalibrateRequest,
    server: &Arc<Server>,
    shutdown: &CancellationToken,
    plan: &Plan,
    name: &str,
) -> Result<crate::report::Summary, Failure> {
    let quiet = RunOptions::default();
    let mut session = Session::set_up(plan, &quiet, server, shutdown).await?;
    let opts = RunOptions {
        out_dir: Some(request.out_dir.join(name)),
        ..Default::default()
    };
    let outcome = session.step(plan, &opts, shutdown).await;
    session.tear_down(false, &request.status).await;
    let s = outcome?.results.summary;
    let load = s.phases.iter().find(|p| p.measured);
    // A claim that found nothing: the backlog ran out (a pause of the harness on a busy
    // machine is not one).
    if load.is_some_and(|p| p.jobs.empty_polls > 0) {
        return Err(Failure::Run(anyhow::anyhow!(
            "the queue ran dry during dbq-bench's run ({name}): raise --prefill"
        )));
    }
    Ok(s)
}

/// Runs pgbench against the queue for the request's duration; returns the transactions it
/// committed (counted from the table) and the CPU seconds it used.
async fn run_pgbench(
    request: &CalibrateRequest,
    queue: &dyn Backend,
    connections: u32,
) -> Result<(u64, f64)> {
    let dir = tempfile::tempdir().context("a directory for the pgbench script")?;
    let args = [
        "-c".to_string(),
        connections.to_string(),
        "-j".into(),
        pgbench::threads(connections).to_string(),
        "-T".into(),
        request.duration.as_secs().max(1).to_string(),
    ];
    let text = pgbench_script();
    let script = (dir.path(), "claim-complete.sql", text.as_str());
    let ran = pgbench::run(&request.pgbench, queue, script, &args).await?;
    pgbench::transactions(&ran.report).context("reading pgbench's output")?;
    let (done, pending) = done_and_pending(queue)
        .await
        .context("counting the jobs pgbench finished")?;
    if pending == 0 {
        bail!(
            "the queue ran dry during pgbench's run ({done} jobs done in {} s): raise --prefill",
            request.duration.as_secs()
        );
    }
    Ok((done as u64, ran.cpu_s))
}

/// Jobs done and jobs pending in the queue.
async fn done_and_pending(queue: &dyn Backend) -> Result<(i64, i64)> {
    let mut conn = queue.connect("main").await?;
    let counts = conn.status_counts().await;
    conn.close().await;
    let counts = counts?;
    let n = |status: &str| {
        counts
            .iter()
            .find(|(s, _)| s == status)
            .map_or(0, |(_, n)| *n)
    };
    Ok((n("done"), n("pending")))
}

impl Calibration {
    /// One row per connection count (the same cells in Markdown and HTML).
    fn table(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let header = [
            "connections",
            "pgbench jobs/s",
            "dbq-bench jobs/s",
            "ratio",
            "ratio range",
            "pgbench CPU µs/job",
            "dbq-bench CPU µs/job",
            "CPU ratio",
            "CPU ratio range",
            "bare dbq-bench jobs/s",
            "instrumentation cost",
        ]
        .map(String::from)
        .to_vec();
        let rows = self
            .rows
            .iter()
            .map(|r| {
                vec![
                    r.connections.to_string(),
                    format!("{:.0}", r.pgbench_per_s),
                    format!("{:.0}", r.harness_per_s),
                    format!("{:.2}×", r.ratio),
                    format!("{:.2}–{:.2}×", r.ratio_range[0], r.ratio_range[1]),
                    format!("{:.0}", r.pgbench_cpu_us_per_job),
                    format!("{:.0}", r.harness_cpu_us_per_job),
                    format!("{:.2}×", r.cpu_ratio),
                    format!("{:.2}–{:.2}×", r.cpu_ratio_range[0], r.cpu_ratio_range[1]),
                    format!("{:.0}", r.bare_per_s),
                    format!(
                        "{:.1}% ({:.1}–{:.1}%)",
                        100.0 * r.instrumentation_cost,
                        100.0 * r.instrumentation_cost_range[0],
                        100.0 * r.instrumentation_cost_range[1]
                    ),
                ]
            })
            .collect();
        (header, rows)
    }

    /// What was run, in one paragraph.
    fn method(&self) -> String {
        format!(
            "The seed's claim + complete transaction on a table prefilled with {} jobs, 0 ms handler, {:.0} s per tool and connection count ({} server); pgbench `-M prepared` first, then `dbq-bench` draining the same way, then `dbq-bench` without its instrumentation in the database (no completion audit, the sampler only at phase boundaries), {} time(s) in turn. Medians of the runs; the ranges are the lowest and highest run.",
            self.prefill, self.duration_s, self.server, self.repeats
        )
    }
}

impl Document for Calibration {
    /// The table, one row per connection count, and what it means.
    fn markdown(&self) -> String {
        let (header, rows) = self.table();
        let mut md = format!("# dbq-bench calibrate\n\n{}\n\n", self.method());
        md.push_str(&page::markdown_table(&header, &rows));
        md.push('\n');
        md.push_str(&conclusion(self));
        md.push('\n');
        md.push('\n');
        md.push_str(&instrumentation(self));
        md.push('\n');
        if let Some(alone) = &self.ceiling {
            md.push('\n');
            md.push_str(&alone.line());
            md.push('\n');
        }
        md
    }

    fn page(&self) -> Page {
        let (header, rows) = self.table();
        let at_parity = self.rows.iter().all(Row::at_parity);
        let mut callouts = vec![Callout {
            tone: if at_parity { Tone::Ok } else { Tone::Warn },
            label: "Against pgbench.".into(),
            text: conclusion(self),
        }];
        callouts.push(Callout {
            tone: Tone::Ok,
            label: "Instrumentation.".into(),
            text: instrumentation(self),
        });
        if let Some(alone) = &self.ceiling {
            callouts.push(Callout {
                tone: Tone::of(alone.proof_ok),
                label: "Ceiling.".into(),
                text: alone.line(),
            });
        }
        Page {
            title: "dbq-bench calibrate".into(),
            subtitle: format!("{} server, {:.0} s per run", self.server, self.duration_s),
            intro: Some(self.method()),
            callouts,
            sections: vec![Section::new(
                "pgbench and dbq-bench",
                page::table(&header, &rows),
            )],
        }
    }
}

/// One line: whether the harness kept up with pgbench at every connection count, or where
/// it did not and what that means for a measurement.
pub fn conclusion(c: &Calibration) -> String {
    let short: Vec<String> = c
        .rows
        .iter()
        .filter(|r| !r.at_parity())
        .map(|r| {
            format!(
                "{} connection(s) ({} pgbench's jobs/s at {} its CPU per job)",
                r.connections,
                times(r.ratio),
                times(r.cpu_ratio)
            )
        })
        .collect();
    if short.is_empty() {
        "At every connection count the harness drained at least as fast as pgbench with no more CPU per job: it is not the limit on this machine.".to_string()
    } else {
        format!(
            "Short of pgbench at {}: near those rates the load generator takes CPU the server could use, so a capacity measured there is a lower bound (a run whose producers fall behind says \"limited by the load generator\").",
            short.join(", ")
        )
    }
}

/// What the harness's own instrumentation (the completion audit's insert in every
/// completing transaction, the sampler's per-second scan) cost its drain rate.
pub fn instrumentation(c: &Calibration) -> String {
    let each: Vec<String> = c
        .rows
        .iter()
        .map(|r| {
            format!(
                "{:.1}% at {} connection(s) ({:.0} against {:.0} jobs/s bare)",
                100.0 * r.instrumentation_cost,
                r.connections,
                r.harness_per_s,
                r.bare_per_s,
            )
        })
        .collect();
    format!(
        "The harness's instrumentation in the database (completion audit and sampler) cost {}. A capacity measured with the defaults is the queue's plus that cost; `verify.completion_audit = false` leaves the audit out (duplicates are then counted by the ledger alone). pgbench runs on a table with the audit's trigger, so only the instrumented harness is compared with it.",
        each.join("; ")
    )
}

/// A ratio as `0.95×`; with a third decimal where two would read `1.00×` for a ratio that
/// is not 1 (a row short of parity by 0.3 % must not read as at parity).
fn times(ratio: f64) -> String {
    if format!("{ratio:.2}") == "1.00" && ratio != 1.0 {
        format!("{ratio:.3}×")
    } else {
        format!("{ratio:.2}×")
    }
}

#[cfg(test)]
mod tests;
