//! The database's side of a run's summary: the server's statistics over the run, how the
//! workers read the queue table (with the claim probes' plans), how the planner got its
//! statistics, and what each job cost.

use super::{ClaimProbeSummary, PhaseSummary, RunFacts};
use crate::metrics::{AnalyzedRecord, Measurements, WindowKind};
use crate::report::dbstats::{self, DbStatsSummary};
use crate::report::setup::RunSetup;
use crate::report::verdict::{self, Verdict};

/// The server's statistics over the run, and how its workers read the queue table (a
/// scan of the whole table in a measured phase is a caveat on the verdict), with the
/// claim probes' plans.
pub(super) fn database_side(
    setup: &RunSetup,
    m: &Measurements,
    facts: &RunFacts,
    phases: &[PhaseSummary],
    verdict: &mut Verdict,
) -> (
    DbStatsSummary,
    Option<crate::report::reads::TableReads>,
    Vec<ClaimProbeSummary>,
) {
    let probes = claim_probe_summaries(m);
    let db_rows = dbstats::rows(m);
    let table_reads = table_reads(setup, m, facts, &db_rows, (phases, &probes));
    if let Some(scanned) = table_reads.as_ref().and_then(|r| r.scanned.as_ref()) {
        verdict::caveat_scanned(verdict, scanned, phases);
    }
    let phase_names: Vec<String> = phases.iter().map(|p| p.name.clone()).collect();
    (
        dbstats::summarize(&db_rows, &phase_names),
        table_reads,
        probes,
    )
}

/// What each job cost over the measured phases; nothing per job when the run is not
/// `complete` (its jobs did not all finish).
pub(super) fn measured_cost(
    db: &DbStatsSummary,
    phases: &[PhaseSummary],
    setup: &RunSetup,
    complete: bool,
) -> crate::report::cost::JobCost {
    let finished: Vec<(&str, u64)> = phases
        .iter()
        .filter(|p| p.measured)
        .map(|p| (p.name.as_str(), p.jobs.completed + p.jobs.dead_lettered))
        .collect();
    let mut cost = crate::report::cost::JobCost::of(db, &finished, setup.engine);
    if !complete {
        cost.withhold_per_job();
    }
    cost
}

/// The queue table's reads (see [`super::reads`]); the phases with the harness's own
/// readers (`active_readers`) do not count as the workers' scans.
fn table_reads(
    setup: &RunSetup,
    m: &Measurements,
    facts: &RunFacts,
    rows: &[dbstats::DbStatsRow],
    (phases, probes): (&[PhaseSummary], &[ClaimProbeSummary]),
) -> Option<crate::report::reads::TableReads> {
    let judged = |phase: &str| {
        m.windows.iter().any(|w| {
            w.kind == WindowKind::Phase && w.name == phase && w.measured && !w.has_own_readers()
        })
    };
    crate::report::reads::summarize(
        setup.engine,
        statistics(setup, m, facts),
        rows,
        &m.timeline,
        phases,
        probes,
        &judged,
    )
}

/// How the planner got the statistics the workers' statements were planned on.
fn statistics(setup: &RunSetup, m: &Measurements, facts: &RunFacts) -> String {
    if setup.stale_statistics {
        return "an ANALYZE of the empty table before the load (queue.stale_statistics)".into();
    }
    if facts.prefilled > 0 {
        return format!("ANALYZE after the prefill of {} jobs", facts.prefilled);
    }
    let at = |a: &AnalyzedRecord| m.since_load_s(a.at_us);
    let (Some(first), Some(last)) = (m.analyzed.first(), m.analyzed.last()) else {
        return "the table as earlier steps and autovacuum left it".into();
    };
    if let Some(failed) = m.analyzed.iter().find(|a| a.error.is_some()) {
        let e = failed.error.as_deref().unwrap_or_default();
        return format!("the ANALYZE {:.1} s into the load failed: {e}", at(failed));
    }
    let mut text = format!(
        "an ANALYZE {:.1} s into the load ({:.0} ms), once the empty table held rows",
        at(first),
        first.took_us as f64 / 1e3
    );
    if m.analyzed.len() > 1 {
        text += &format!(
            ", and {} more as it doubled (the last {:.0} s in, {} jobs enqueued)",
            m.analyzed.len() - 1,
            at(last),
            last.rows
        );
    }
    text
}

/// The claim probes, timed from the start of the load.
fn claim_probe_summaries(m: &Measurements) -> Vec<ClaimProbeSummary> {
    m.claim_probes
        .iter()
        .map(|c| ClaimProbeSummary {
            label: c.label.clone(),
            at_s: m.since_load_s(c.at_us),
            buffers: c.probe.buffers_hit + c.probe.buffers_read,
            probe: c.probe.clone(),
        })
        .collect()
}
