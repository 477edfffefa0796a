//! A run's limits: each load phase's from its own window, and the measured phases' together,
//! read from the figures the summary already holds (counts, latencies, database statistics,
//! table reads) and the harness's samples over each window.

use super::{AwayFromStalls, Limit, LimitFigures, Window};
use crate::metrics::{HarnessSummary, LatencyReport, Measurements, PhaseCounts, WindowKind};
use crate::report::dbstats::DbStatsSummary;
use crate::report::phases::PhaseSummary;
use crate::report::reads::TableReads;
use crate::report::setup::RunSetup;
use crate::report::stall::GroupStall;
use crate::report::summary::Summary;
use std::collections::BTreeMap;

/// Who did the work: the workers and the producers' connections.
pub struct Workers {
    pub count: u32,
    /// A library's own worker processes (they report their handlers' time only).
    pub library: bool,
    pub producer_connections: u64,
}

impl Workers {
    pub fn of(setup: &RunSetup) -> Workers {
        Workers {
            count: setup.workers,
            library: setup.library,
            producer_connections: setup.producer_connections,
        }
    }
}

/// Names the limit of each load phase from its own window; `fell_short`: it did not keep up.
pub fn name_phase_limits(
    phases: &mut [PhaseSummary],
    m: &Measurements,
    db: &DbStatsSummary,
    reads: Option<&TableReads>,
    workers: &Workers,
) {
    for p in phases.iter_mut().filter(|p| p.kind == WindowKind::Phase) {
        let Some(w) = m.windows.iter().find(|w| w.name == p.name) else {
            continue;
        };
        let stats = db.per_phase.iter().find(|d| d.phase == p.name);
        let rows = reads
            .and_then(|r| r.per_phase.iter().find(|x| x.phase == p.name))
            .map(|r| r.rows_read_per_claim);
        let machine = HarnessSummary::over(&m.harness, w.start_us, w.end_us);
        let stalls: Vec<f64> = machine
            .iter()
            .flat_map(|h| &h.stalls)
            .map(|s| p.start_s + s.at_s)
            .collect();
        let seconds: Vec<_> = m.timeline.iter().filter(|r| r.phase == p.name).collect();
        let figures = LimitFigures::of(Window {
            window_s: p.duration_s,
            workers: workers.count,
            library_workers: workers.library,
            producer_connections: workers.producer_connections,
            counts: &p.jobs,
            machine,
            waits: stats.map(|d| &d.wait_events),
            claim_p50_ms: p.latency_ms.claim.p50,
            claim_trend_ms: super::claim_trend(&seconds),
            table_bytes: stats.map(|d| (d.total_bytes_start, d.total_bytes_end)),
            dead_tuples_max: stats.map_or(0, |d| d.dead_tuples_max),
            autovacuums: stats.map_or(0, |d| d.autovacuums),
            checkpoints: stats.map_or(0, |d| d.checkpoints),
            rows_read_per_claim: rows,
            away_from_stalls: AwayFromStalls::of(&seconds, &stalls),
            group_stall: GroupStall::within(m, w.start_us, w.end_us),
        });
        p.limit = Some(Limit::judge(figures, p.kept_up == Some(false)));
    }
}

/// The limit of the measured phases together; `fell_short`: the run did not keep up.
pub fn measured_limit(
    phases: &[PhaseSummary],
    (counts, latency): (&PhaseCounts, &LatencyReport),
    (machine, db, group_stall): (Option<HarnessSummary>, &DbStatsSummary, Option<GroupStall>),
    workers: &Workers,
    fell_short: bool,
) -> Option<Limit> {
    let measured: Vec<&PhaseSummary> = phases.iter().filter(|p| p.measured).collect();
    let window_s: f64 = measured.iter().map(|p| p.duration_s).sum();
    if window_s <= 0.0 {
        return None;
    }
    let stats: Vec<_> = db
        .per_phase
        .iter()
        .filter(|d| measured.iter().any(|p| p.name == d.phase))
        .collect();
    let mut waits: BTreeMap<String, i64> = BTreeMap::new();
    for d in &stats {
        for (k, v) in &d.wait_events {
            *waits.entry(k.clone()).or_default() += v;
        }
    }
    let figures = LimitFigures::of(Window {
        window_s,
        workers: workers.count,
        library_workers: workers.library,
        producer_connections: workers.producer_connections,
        counts,
        machine,
        waits: Some(&waits),
        claim_p50_ms: latency.claim.p50,
        claim_trend_ms: None,
        table_bytes: None,
        dead_tuples_max: stats.iter().map(|d| d.dead_tuples_max).max().unwrap_or(0),
        autovacuums: stats.iter().map(|d| d.autovacuums).sum(),
        checkpoints: stats.iter().map(|d| d.checkpoints).sum(),
        rows_read_per_claim: None,
        away_from_stalls: None,
        group_stall,
    });
    Some(Limit::judge(figures, fell_short))
}

/// Names each load phase's limit, and returns the measured phases' together.
pub fn limits(
    (setup, m): (&RunSetup, &Measurements),
    phases: &mut [PhaseSummary],
    (db_stats, table_reads): (&DbStatsSummary, Option<&TableReads>),
    measured: (&PhaseCounts, &LatencyReport),
    (harness, fell_short): (Option<HarnessSummary>, bool),
) -> Option<Limit> {
    let workers = Workers::of(setup);
    name_phase_limits(phases, m, db_stats, table_reads, &workers);
    let stall = GroupStall::measured(m);
    measured_limit(
        phases,
        measured,
        (harness, db_stats, stall),
        &workers,
        fell_short,
    )
}

/// Once the thresholds are judged: a phase whose own threshold failed fell short, and so did
/// the run when any failed.
pub fn rejudge_after_thresholds(s: &mut Summary) {
    let failed: Vec<Option<String>> = s
        .thresholds
        .iter()
        .filter(|t| !t.passed)
        .map(|t| t.phase.clone())
        .collect();
    for p in &mut s.phases {
        let broke = failed.iter().any(|f| f.as_deref() == Some(p.name.as_str()));
        if let Some(l) = p.limit.as_mut().filter(|_| broke) {
            *l = l.rejudged(true);
        }
    }
    let run_fell_short = !s.verdict.kept_up || !s.thresholds_passed;
    if let Some(l) = s.limit.as_mut() {
        *l = l.rejudged(run_fell_short);
    }
}
