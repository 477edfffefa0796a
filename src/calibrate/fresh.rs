//! `dbq-bench calibrate --fresh-table RATE,…`: the harness's answer checked against an
//! independent load. At each rate, the same open-loop case on a fresh queue table of one
//! server, once through pgbench and once through the harness: the seed's own statements, the
//! scenario's consumers with the handler as a `\sleep` inside the claim's transaction and
//! the idle poll as a `\sleep` after an empty claim, Poisson arrivals at the rate (pgbench
//! `-R`), the same first-vacuum condition and the same statistics (the empty table analyzed
//! a second into the load and again each time it doubled). Both are sampled once a second by the harness's own sampler
//! statement and shown side by side: completed rate, most jobs waiting, dead tuples, the
//! claim's cost and how the claims read the table. A difference beyond noise is the
//! harness's, and the output says so.
//!
//! Rules: both sides get the same set-up, table and conditions; a figure the two measure
//! differently says how (pgbench's claim time is its mean over every claim, found or empty;
//! the harness's over the claims that found a job); each side's raw output is kept.

use super::pgbench;
use crate::backend::{Backend, DbSample, Link, Vacuum};
use crate::clock::RunClock;
use crate::error::{Failure, InputError};
use crate::provider::Server;
use crate::report::artifact::{self, Document};
use crate::report::dbstats::{self, DbStatsRow};
use crate::report::page::{self, Callout, Page, Section, Tone};
use crate::report::verdict::Backlog;
use crate::run::{self, RunOptions, Session};
use crate::scenario::{
    Arrival, ClaimMode, DurationDist, FaultSpec, FirstVacuum, HumanDuration, PhaseSection, Plan,
    PlanChange, Rate, VariantName,
};
use crate::status::Status;
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod document;
mod scripts;

use scripts::{CLAIM, consume_script, enqueue_script, padded_payload, statement};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The harness's drain after its window (pgbench has none: its jobs left are left).
const DRAIN: Duration = Duration::from_secs(10);
/// Completed rates within this share of each other agree.
const RATE_NOISE: f64 = 0.05;
/// A fresh table's first stretch without a vacuum when the server names no naptime.
const NAPTIME_UNKNOWN: Duration = Duration::from_secs(60);
/// How far into the load the empty table is first analyzed (as the harness's own set-up
/// does; then again each time it doubles).
const ANALYZE_AFTER: Duration = Duration::from_secs(1);

pub struct FreshRequest {
    /// The scenario: the seed design, its consumers, handler, poll and producers.
    pub plan: Plan,
    pub rates: Vec<f64>,
    pub duration: Duration,
    pub first_vacuum: FirstVacuum,
    pub repeats: u32,
    pub pgbench: PathBuf,
    pub out_dir: PathBuf,
    pub status: Status,
}

/// The cross-check: every rate and repeat, both tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FreshCheck {
    pub server: String,
    pub duration_s: f64,
    pub repeats: u32,
    pub consumers: usize,
    pub producers: usize,
    pub handler_ms: f64,
    pub poll_ms: f64,
    /// How long autovacuum was kept off each fresh table (`None`: whenever it came).
    pub first_vacuum_after_s: Option<f64>,
    pub rows: Vec<FreshRow>,
}

/// One rate, one repeat: both tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FreshRow {
    pub rate: f64,
    pub repeat: u32,
    pub pgbench: Side,
    pub harness: Side,
    /// The two agree within noise.
    pub agree: bool,
    /// What the comparison says, in one sentence.
    pub finding: String,
}

/// What one tool's run did to the fresh table.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Side {
    pub completed_per_s: f64,
    /// The most jobs waiting in any second.
    pub most_waiting: i64,
    pub dead_tuples_max: i64,
    /// Mean claim statement latency, ms (pgbench: every claim; the harness: those that
    /// found a job).
    pub claim_mean_ms: f64,
    /// Sequential scans of the queue table per claim statement.
    pub seq_scans_per_claim: f64,
    /// The backlog never rose further above its start than the verdict allows, and ended
    /// within its tolerance.
    pub kept_up: bool,
    pub dir: PathBuf,
}

impl FreshRequest {
    /// Checks what pgbench can run before anything starts: the seed on PostgreSQL, claimed
    /// in the worker's transaction, a fixed handler, one job type and one priority.
    pub fn check(&self) -> Result<(), InputError> {
        let p = &self.plan;
        let err = |key: &str, reason: &str| {
            Err(InputError::new(
                &p.source,
                key,
                format!("calibrate --fresh-table {reason}"),
            ))
        };
        if p.database.engine != crate::backend::Engine::Postgres {
            return err("database.engine", "runs pgbench, PostgreSQL's tool");
        }
        if p.queue.variant.name != VariantName::Seed {
            return err(
                "queue.variant",
                "runs the seed's own statements through pgbench: write variant = \"seed\" (compare other designs with `matrix`)",
            );
        }
        if p.consumers.claim_mode != ClaimMode::InTransaction {
            return err(
                "consumers.claim_mode",
                "runs the seed's worker: claim, handler and completion in one transaction (in_transaction)",
            );
        }
        if !matches!(p.consumers.handler.duration, DurationDist::Fixed(_))
            || p.consumers.handler.error_rate > 0.0
            || p.consumers.handler.slow.is_some()
        {
            return err(
                "consumers.handler",
                "runs the handler as pgbench's \\sleep: a fixed duration, no slow runs and no errors",
            );
        }
        if p.producers.job_types.len() != 1 || p.producers.priorities.len() != 1 {
            return err(
                "producers",
                "enqueues one kind of job: one job type and one priority",
            );
        }
        Ok(())
    }

    /// The first vacuum's hold on this server: one `autovacuum_naptime`, at most the run.
    fn hold(&self, settings: &BTreeMap<String, String>) -> Option<Duration> {
        let naptime = settings
            .get("autovacuum_naptime")
            .and_then(|v| humantime::parse_duration(v).ok())
            .unwrap_or(NAPTIME_UNKNOWN);
        (self.first_vacuum == FirstVacuum::Late).then(|| naptime.min(self.duration))
    }

    /// The harness's plan at `rate`: one measured phase on a fresh table, Poisson arrivals,
    /// no bystander, no thresholds, a short drain; the first vacuum held for `hold`.
    fn plan_at(&self, rate: f64, hold: Option<Duration>) -> Result<Plan, InputError> {
        let faults = hold
            .map(|h| FaultSpec::DelayVacuum {
                hold: Some(HumanDuration(h)),
            })
            .into_iter()
            .collect();
        let phase = PhaseSection {
            name: "fresh".into(),
            duration: HumanDuration(self.duration),
            rate: Some(Rate::PerSecond(rate)),
            measured: true,
            faults,
            thresholds: BTreeMap::new(),
        };
        self.plan.changed([
            PlanChange::Phases(vec![phase]),
            PlanChange::Prefill(0),
            PlanChange::RunThresholds(BTreeMap::new()),
            PlanChange::DrainTimeout(DRAIN),
            PlanChange::Arrival(Arrival::Poisson),
            PlanChange::NoBystander,
        ])
    }
}

/// Runs both tools at every rate, `repeats` times in turn (pgbench, then the harness), and
/// writes `fresh-table.json`, `.md` and `.html`.
pub async fn run(
    request: &FreshRequest,
    shutdown: &CancellationToken,
) -> Result<FreshCheck, Failure> {
    request.check()?;
    std::fs::create_dir_all(&request.out_dir)
        .with_context(|| format!("creating {}", request.out_dir.display()))?;
    let first = request.plan_at(request.rates[0], None)?;
    let server = run::provision(&first, &request.status).await?;
    let result = measure_all(request, &server, shutdown).await;
    run::release(server, false, &request.status).await;
    let (rows, hold) = result?;
    let p = &request.plan;
    let check = FreshCheck {
        server: p.database.provider.as_str().into(),
        duration_s: request.duration.as_secs_f64(),
        repeats: request.repeats,
        consumers: p.consumers.count,
        producers: p.producers.count,
        handler_ms: handler(p).as_secs_f64() * 1e3,
        poll_ms: p.consumers.poll_interval.as_secs_f64() * 1e3,
        first_vacuum_after_s: hold.map(|h| h.as_secs_f64()),
        rows,
    };
    artifact::write(
        &request.out_dir,
        &check,
        &[
            &artifact::Json("fresh-table.json"),
            &artifact::Markdown("fresh-table.md"),
            &artifact::Html("fresh-table.html"),
        ],
    )
    .context("writing the cross-check")?;
    Ok(check)
}

fn handler(p: &Plan) -> Duration {
    match p.consumers.handler.duration {
        DurationDist::Fixed(d) => d.0,
        _ => Duration::ZERO,
    }
}

async fn measure_all(
    request: &FreshRequest,
    server: &Arc<Server>,
    shutdown: &CancellationToken,
) -> Result<(Vec<FreshRow>, Option<Duration>), Failure> {
    let mut rows = Vec::new();
    let mut hold = None;
    for &rate in &request.rates {
        for repeat in 1..=request.repeats {
            let say = |tool: &str| {
                request.status.line(&format!(
                    "calibrate --fresh-table: {rate:.0} jobs/s, run {repeat} of {}: {tool} for {}…",
                    request.repeats,
                    HumanDuration(request.duration)
                ))
            };
            say("pgbench");
            let tag = format!("{rate:.0}-{repeat}");
            let (pg, h) = pgbench_side(request, server, rate, &tag, shutdown).await?;
            hold = h;
            if shutdown.is_cancelled() {
                return Err(Failure::Interrupted);
            }
            say("dbq-bench");
            let harness = harness_side(request, server, rate, h, &tag, shutdown).await?;
            rows.push(FreshRow::of(rate, repeat, pg, harness));
            let row = rows.last().expect("just pushed");
            request.status.line(&format!("  {}", row.finding));
        }
    }
    Ok((rows, hold))
}

/// The harness's run at `rate` on a fresh table, judged as pgbench's is.
async fn harness_side(
    request: &FreshRequest,
    server: &Arc<Server>,
    rate: f64,
    hold: Option<Duration>,
    tag: &str,
    shutdown: &CancellationToken,
) -> Result<Side, Failure> {
    let plan = request.plan_at(rate, hold)?;
    let dir = request.out_dir.join(format!("harness-{tag}"));
    let opts = RunOptions {
        out_dir: Some(dir.clone()),
        ..RunOptions::default()
    };
    let mut session = Session::set_up(&plan, &opts, server, shutdown).await?;
    let outcome = session.step(&plan, &opts, shutdown).await;
    session.tear_down(false, &request.status).await;
    let results = outcome?.results;
    let s = &results.summary;
    let depths: Vec<(i64, i64)> = results
        .timeline
        .iter()
        .filter(|r| r.phase == "fresh")
        .filter_map(|r| Some((r.second, r.queue_depth?)))
        .collect();
    let phase = s.db_stats.per_phase.iter().find(|p| p.phase == "fresh");
    let reads = s.table_reads.as_ref().and_then(|r| r.per_phase.first());
    Ok(Side {
        completed_per_s: s.throughput.completed_per_s,
        most_waiting: depths.iter().map(|d| d.1).max().unwrap_or(0),
        dead_tuples_max: phase.map_or(0, |p| p.dead_tuples_max),
        claim_mean_ms: s.latency_ms.claim.mean,
        seq_scans_per_claim: reads.map_or(f64::NAN, |r| r.seq_scans_per_claim),
        kept_up: kept_up(&depths, rate, &plan, s.jobs.enqueued),
        dir,
    })
}

/// The verdict's backlog rule on a run's seconds: never further above the start than it
/// allows, and back within max(10, 2% of the jobs) at the end.
fn kept_up(depths: &[(i64, i64)], rate: f64, plan: &Plan, jobs: u64) -> bool {
    let rows: Vec<crate::metrics::TimelineRow> = depths
        .iter()
        .map(|&(second, depth)| crate::metrics::TimelineRow {
            second,
            queue_depth: Some(depth),
            ..crate::metrics::TimelineRow::default()
        })
        .collect();
    let refs: Vec<&crate::metrics::TimelineRow> = rows.iter().collect();
    let b = Backlog::of(&refs, rate, plan.consumers.poll_interval.as_secs_f64());
    let grew = b.start.zip(b.end).map_or(0, |(s, e)| e - s);
    b.behind.is_none() && grew as f64 <= (jobs as f64 * 0.02).max(10.0)
}

/// pgbench's run at `rate` on a fresh table set up as the harness's is; the first vacuum's
/// hold it used (the server's naptime).
async fn pgbench_side(
    request: &FreshRequest,
    server: &Arc<Server>,
    rate: f64,
    tag: &str,
    shutdown: &CancellationToken,
) -> Result<(Side, Option<Duration>), Failure> {
    let quiet = RunOptions::default();
    let plan = request.plan_at(rate, None)?;
    let session = Session::set_up(&plan, &quiet, server, shutdown).await?;
    let hold = request.hold(session.server_settings());
    let dir = request.out_dir.join(format!("pgbench-{tag}"));
    let result = drive(request, &plan, &session, (rate, hold), &dir).await;
    session.tear_down(false, &request.status).await;
    Ok((result.map_err(Failure::Run)?, hold))
}

/// pgbench's consumers and producers for the request's duration, the table sampled once a
/// second, the empty table analyzed and the first vacuum held as the harness's run does.
async fn drive(
    request: &FreshRequest,
    plan: &Plan,
    session: &Session,
    (rate, hold): (f64, Option<Duration>),
    dir: &Path,
) -> anyhow::Result<Side> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let queue = session.backend().clone();
    let mut admin = queue.connect("main").await?;
    if hold.is_some() {
        vacuum_of(&mut *admin)?.hold_autovacuum(true).await?;
    }
    let clock = RunClock::start();
    let stop = CancellationToken::new();
    let sampler = tokio::spawn(sample_every_second(queue.clone(), clock, stop.clone()));
    let chores = tokio::spawn(conditions(
        queue.clone(),
        (session.analyzes_in_load(), hold),
        request.duration,
        clock,
    ));
    let (consumers, producers) = tokio::join!(
        consume(request, plan, &*queue, dir),
        enqueue(request, plan, &*queue, (dir, rate)),
    );
    stop.cancel();
    let samples = sampler.await.unwrap_or_default();
    chores.await.ok();
    let (consumers, _) = (consumers?, producers?);
    if let (Some(_), Some(v)) = (hold, admin.vacuum()) {
        v.hold_autovacuum(false).await.ok();
    }
    let counts = admin.status_counts().await;
    admin.close().await;
    let done = counts?
        .iter()
        .find(|(s, _)| s == "done")
        .map_or(0, |(_, n)| *n);
    let rows = dbstats::rows_of(samples.into_iter().map(|(t, s)| (t, "fresh".into(), s)));
    let mut csv = Vec::new();
    dbstats::write_csv(&rows, &mut csv)?;
    std::fs::write(dir.join("db_stats.csv"), csv)?;
    side_of(&rows, (&consumers.report, done), (rate, plan), dir)
}

/// A side's figures from its samples, pgbench's report and the jobs done.
fn side_of(
    rows: &[DbStatsRow],
    (report, done): (&str, i64),
    (rate, plan): (f64, &Plan),
    dir: &Path,
) -> anyhow::Result<Side> {
    let claims = pgbench::transactions(report)?;
    let scans = match (rows.first(), rows.last()) {
        (Some(a), Some(b)) => {
            b.sample.reads.unwrap_or_default().seq_scans
                - a.sample.reads.unwrap_or_default().seq_scans
        }
        _ => 0,
    };
    let depths: Vec<(i64, i64)> = rows
        .iter()
        .map(|r| (r.t_s.floor() as i64, r.sample.pending))
        .collect();
    let claim = statement(CLAIM);
    let first_line = claim.lines().next().unwrap_or("");
    let enqueued = (rate * plan.phases[0].duration.as_secs_f64()) as u64;
    Ok(Side {
        completed_per_s: done as f64 / plan.phases[0].duration.as_secs_f64(),
        most_waiting: depths.iter().map(|d| d.1).max().unwrap_or(0),
        dead_tuples_max: rows
            .iter()
            .filter_map(|r| r.sample.versions.map(|v| v.dead))
            .max()
            .unwrap_or(0),
        claim_mean_ms: pgbench::statement_latency_ms(report, first_line.trim()).unwrap_or(f64::NAN),
        seq_scans_per_claim: scans as f64 / claims.max(1) as f64,
        kept_up: kept_up(&depths, rate, plan, enqueued),
        dir: dir.to_path_buf(),
    })
}

/// The harness's sampler statement once a second until `stop`: (seconds, sample).
async fn sample_every_second(
    queue: Arc<dyn Backend>,
    clock: RunClock,
    stop: CancellationToken,
) -> Vec<(f64, DbSample)> {
    let mut samples = Vec::new();
    let Ok(mut conn) = queue.connect("sampler").await else {
        return samples;
    };
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    while !stop.is_cancelled() {
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = tick.tick() => {}
        }
        if let Ok(s) = conn.sample(samples.is_empty()).await {
            samples.push((clock.now_us() as f64 / 1e6, s));
        }
    }
    conn.close().await;
    samples
}

/// The harness's conditions on pgbench's table: the empty table analyzed a second in and
/// again each time it doubles (when the harness's set-up would; at a fixed rate, at 2, 4,
/// 8 … s), and the first vacuum after `hold` (paced as autovacuum's), autovacuum then let
/// back on.
async fn conditions(
    queue: Arc<dyn Backend>,
    (analyze, hold): (bool, Option<Duration>),
    duration: Duration,
    clock: RunClock,
) -> anyhow::Result<()> {
    let mut chores: Vec<(Duration, bool)> = Vec::new();
    let mut at = ANALYZE_AFTER;
    while analyze && at < duration {
        chores.push((at, false));
        at *= 2;
    }
    chores.extend(hold.map(|h| (h, true)));
    chores.sort();
    let mut conn = queue.connect("statistics").await?;
    for (at, vacuum) in chores {
        tokio::time::sleep(clock.until(at.as_micros() as u64)).await;
        if vacuum {
            let v = vacuum_of(&mut *conn)?;
            v.vacuum_as_autovacuum().await?;
            v.hold_autovacuum(false).await?;
        } else {
            let planner = conn
                .planner()
                .ok_or_else(|| anyhow::anyhow!("no planner"))?;
            planner.analyze().await?;
        }
    }
    conn.close().await;
    Ok(())
}

/// The consumers: the seed's worker as a pgbench script, one client per consumer.
async fn consume(
    request: &FreshRequest,
    plan: &Plan,
    queue: &dyn Backend,
    dir: &Path,
) -> anyhow::Result<pgbench::Ran> {
    let script = consume_script(handler(plan), plan.consumers.poll_interval);
    let n = plan.consumers.count as u32;
    let args = [
        "-r".to_string(),
        "-c".into(),
        n.to_string(),
        "-j".into(),
        pgbench::threads(n).to_string(),
        "-T".into(),
        request.duration.as_secs().max(1).to_string(),
    ];
    let ran = pgbench::run(
        &request.pgbench,
        queue,
        (dir, "consume.sql", &script),
        &args,
    )
    .await?;
    std::fs::write(dir.join("consume.txt"), &ran.report)?;
    Ok(ran)
}

/// The producers: the seed's insert at `rate` (pgbench `-R`: Poisson arrivals).
async fn enqueue(
    request: &FreshRequest,
    plan: &Plan,
    queue: &dyn Backend,
    (dir, rate): (&Path, f64),
) -> anyhow::Result<pgbench::Ran> {
    let p = &plan.producers;
    let payload = padded_payload(p.payload_bytes);
    let args = [
        "-c".to_string(),
        p.count.to_string(),
        "-j".into(),
        "1".into(),
        "-R".into(),
        format!("{rate}"),
        "-T".into(),
        request.duration.as_secs().max(1).to_string(),
        "-D".into(),
        format!("type={}", p.job_types[0].0),
        "-D".into(),
        format!("payload={payload}"),
        "-D".into(),
        format!("priority={}", p.priorities[0].0),
        "-D".into(),
        format!("max_retries={}", plan.queue.max_retries),
    ];
    let script = enqueue_script();
    let ran = pgbench::run(
        &request.pgbench,
        queue,
        (dir, "enqueue.sql", &script),
        &args,
    )
    .await?;
    std::fs::write(dir.join("enqueue.txt"), &ran.report)?;
    Ok(ran)
}

/// The link's per-table cleanup (calibrate runs on PostgreSQL only, which has it).
fn vacuum_of(link: &mut dyn Link) -> anyhow::Result<&mut dyn Vacuum> {
    link.vacuum()
        .ok_or_else(|| anyhow::anyhow!("this engine has no per-table cleanup to hold back"))
}

#[cfg(test)]
mod tests;
