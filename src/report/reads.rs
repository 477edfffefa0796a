//! What the workers' statements really read of the queue table. A worker keeps the plan its
//! prepared claim was first given until something invalidates it, and a probe (planned
//! afresh on a connection of its own) cannot see that plan; the server's own counters can.
//!
//! Rules: the figures come from the server, never from the harness's idea of the plan.
//! PostgreSQL counts reads per table (`pg_stat_user_tables`, the sampler's own reads taken
//! out); MariaDB plans every execution again, so its claim probe is the workers' plan. A
//! claim that scanned the table sequentially, reading a table of any size, is called out
//! with one sentence ([`Scanned::sentence`]) that every format and study repeats: such a
//! run measures that plan, not the queue.

use super::dbstats::DbStatsRow;
use super::phases::{ClaimProbeSummary, PhaseSummary};
use crate::backend::{Engine, engine::ReadsFrom};
use crate::metrics::TimelineRow;
use serde::{Deserialize, Serialize};

/// Sequential scans in one sampling interval below this are the harness's own (the reaper's
/// scan, a full sample's count) or noise.
const MIN_SCANS: i64 = 5;
/// An interval counts as scanning when its sequential scans are at least this share of the
/// claim statements run in it (a batch claim scans once for many jobs).
const SCANS_PER_CLAIM: f64 = 0.1;
/// A sequential scan of fewer rows than this reads a table small enough that the planner
/// rightly prefers it; the hazard is a scan that grows with the table.
const MIN_ROWS_PER_SCAN: f64 = 1000.0;

/// The queue table's reads over the run, and where the workers' statements scanned it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TableReads {
    /// Where the figures come from.
    pub source: String,
    /// How the planner got the statistics the workers' statements were planned on.
    #[serde(default)]
    pub statistics: String,
    /// Per phase (counters from the sample before its first to its last).
    pub per_phase: Vec<PhaseReads>,
    /// Set when the workers' statements read the table sequentially.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scanned: Option<Scanned>,
}

/// One phase's reads of the queue table by everyone but the sampler.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PhaseReads {
    pub phase: String,
    pub measured: bool,
    /// Claim statements the workers ran (batches claimed and empty polls).
    pub claim_statements: u64,
    pub seq_scans: i64,
    pub seq_rows_read: i64,
    pub index_scans: i64,
    pub index_rows_fetched: i64,
    /// Sequential scans per claim statement (a completion's scan counts too).
    pub seq_scans_per_claim: f64,
    /// Rows read (by sequential scans and fetched through indexes) per claim statement.
    pub rows_read_per_claim: f64,
}

/// The stretch in which the workers' statements scanned the queue table.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Scanned {
    /// Seconds since the load started: the first and last moment seen scanning.
    pub from_s: f64,
    pub until_s: f64,
    /// Sequential scans per claim statement over that stretch, and rows each scan read.
    pub seq_scans_per_claim: f64,
    pub rows_per_scan: f64,
    /// The one wording every format and study uses.
    pub sentence: String,
}

/// The queue table's reads: from the samples' counters where the server counts reads per
/// table (PostgreSQL), from the claim probes where it plans every execution again (MariaDB);
/// `None` for a broker, which has no plan. `judged`: whether a phase's scans speak of its
/// figures: a measured phase free of the harness's own readers (the `active_readers`
/// fault), which scan the table on purpose; a warm-up or the drain is not judged.
pub fn summarize(
    engine: Engine,
    statistics: String,
    rows: &[DbStatsRow],
    timeline: &[TimelineRow],
    phases: &[PhaseSummary],
    probes: &[ClaimProbeSummary],
    judged: &dyn Fn(&str) -> bool,
) -> Option<TableReads> {
    match engine.facts().reads {
        ReadsFrom::Counters(source) => Some(TableReads {
            statistics,
            source: source.into(),
            per_phase: per_phase(rows, phases),
            scanned: scanned_by_counters(rows, timeline, judged),
        }),
        ReadsFrom::ClaimProbes(source) => Some(TableReads {
            statistics,
            source: source.into(),
            per_phase: Vec::new(),
            scanned: scanned_by_probes(probes),
        }),
        ReadsFrom::Nothing => None,
    }
}

fn per_phase(rows: &[DbStatsRow], phases: &[PhaseSummary]) -> Vec<PhaseReads> {
    phases
        .iter()
        .filter_map(|p| {
            let first = rows.iter().position(|r| r.phase == p.name)?;
            let last = rows.iter().rposition(|r| r.phase == p.name)?;
            let before = rows[first.saturating_sub(1)].sample.reads?;
            let read = rows[last].sample.reads?.minus(before);
            let claims = p.jobs.claim_statements;
            let per = |n: i64| n as f64 / claims.max(1) as f64;
            Some(PhaseReads {
                phase: p.name.clone(),
                measured: p.measured,
                claim_statements: claims,
                seq_scans: read.seq_scans,
                seq_rows_read: read.seq_rows,
                index_scans: read.index_scans,
                index_rows_fetched: read.index_rows,
                seq_scans_per_claim: round(per(read.seq_scans), 3),
                rows_read_per_claim: round(per(read.seq_rows + read.index_rows), 1),
            })
        })
        .collect()
}

impl Scanned {
    /// Whether the stretch seen scanning overlaps the window `[start_s, end_s)`.
    pub fn overlaps(&self, start_s: f64, end_s: f64) -> bool {
        self.from_s < end_s && self.until_s >= start_s
    }
}

impl TableReads {
    /// One sentence for the terminal and the report: the callout when the workers scanned
    /// the table, else what they read over the measured phases.
    pub fn line(&self) -> String {
        if let Some(s) = &self.scanned {
            return format!("{} Statistics: {}.", s.sentence, self.statistics);
        }
        let measured: Vec<&PhaseReads> = self.per_phase.iter().filter(|p| p.measured).collect();
        if measured.is_empty() {
            return format!(
                "No claim read the whole queue table ({}). Statistics: {}.",
                self.source, self.statistics
            );
        }
        let claims: u64 = measured.iter().map(|p| p.claim_statements).sum();
        let sum = |f: fn(&PhaseReads) -> i64| measured.iter().map(|p| f(p)).sum::<i64>();
        let per = |n: i64| n as f64 / claims.max(1) as f64;
        format!(
            "The workers' statements read the queue table through its indexes: {:.3} sequential scans, {:.2} index scans and {:.1} rows read per claim over the measured phases ({}). Statistics: {}.",
            per(sum(|p| p.seq_scans)),
            per(sum(|p| p.index_scans)),
            per(sum(|p| p.seq_rows_read + p.index_rows_fetched)),
            self.source,
            self.statistics
        )
    }
}

impl TableReads {
    /// The phases as one table for every format (header, rows); `None` when the engine's
    /// figures are its probes' (they are in the claim's cost table).
    pub fn table(&self) -> Option<(Vec<String>, Vec<Vec<String>>)> {
        if self.per_phase.is_empty() {
            return None;
        }
        let header = [
            "phase",
            "claims",
            "sequential scans",
            "rows read by them",
            "index scans",
            "rows fetched through indexes",
            "sequential scans per claim",
            "rows read per claim",
        ]
        .map(String::from)
        .to_vec();
        let rows = self
            .per_phase
            .iter()
            .map(|p| {
                vec![
                    p.phase.clone(),
                    p.claim_statements.to_string(),
                    p.seq_scans.to_string(),
                    p.seq_rows_read.to_string(),
                    p.index_scans.to_string(),
                    p.index_rows_fetched.to_string(),
                    format!("{:.3}", p.seq_scans_per_claim),
                    format!("{:.1}", p.rows_read_per_claim),
                ]
            })
            .collect();
        Some((header, rows))
    }
}

/// Intervals between samples whose sequential scans were many, a share of the claims run
/// in them, and each of a table larger than a planner would rightly scan.
fn scanned_by_counters(
    rows: &[DbStatsRow],
    timeline: &[TimelineRow],
    judged: &dyn Fn(&str) -> bool,
) -> Option<Scanned> {
    let (mut from, mut until) = (None, 0.0);
    let (mut scans, mut scan_rows, mut claims) = (0i64, 0i64, 0u64);
    for pair in rows.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let (Some(ra), Some(rb)) = (a.sample.reads, b.sample.reads) else {
            continue;
        };
        let d = rb.minus(ra);
        let run: u64 = timeline
            .iter()
            .filter(|t| (t.second as f64) >= a.t_s.floor() && (t.second as f64) < b.t_s.floor())
            .map(|t| t.claim_statements)
            .sum();
        let scanning = d.seq_scans >= MIN_SCANS
            && d.seq_scans as f64 >= SCANS_PER_CLAIM * run as f64
            && d.seq_rows as f64 >= MIN_ROWS_PER_SCAN * d.seq_scans as f64
            && judged(&b.phase);
        if scanning {
            from.get_or_insert(a.t_s.max(0.0));
            until = b.t_s;
            (scans, scan_rows, claims) =
                (scans + d.seq_scans, scan_rows + d.seq_rows, claims + run);
        }
    }
    let from_s = from?;
    let per_claim = scans as f64 / claims.max(1) as f64;
    let rows_per_scan = scan_rows as f64 / scans.max(1) as f64;
    Some(Scanned {
        from_s,
        until_s: until,
        seq_scans_per_claim: round(per_claim, 2),
        rows_per_scan: rows_per_scan.round(),
        sentence: format!(
            "The workers' statements scanned the queue table sequentially from {from_s:.0} s to {until:.0} s ({per_claim:.1} scans per claim, {rows_per_scan:.0} rows each, pg_stat_user_tables): their prepared plans did not use the queue's index, so these figures measure that plan, not the queue."
        ),
    })
}

/// A probe that read the whole table (MariaDB's access type `ALL`) of more than a few rows.
fn scanned_by_probes(probes: &[ClaimProbeSummary]) -> Option<Scanned> {
    let full: Vec<&ClaimProbeSummary> = probes
        .iter()
        .filter(|p| {
            p.probe.plan.iter().any(|n| n.starts_with("ALL on "))
                && p.probe.rows as f64 >= MIN_ROWS_PER_SCAN
        })
        .collect();
    let (first, last) = (full.first()?, full.last()?);
    Some(Scanned {
        from_s: first.at_s,
        until_s: last.at_s,
        seq_scans_per_claim: 1.0,
        rows_per_scan: first.probe.rows as f64,
        sentence: format!(
            "The claim read the whole queue table ({} rows at \"{}\"; MariaDB plans every execution again, so the workers' claim did too): these figures measure that plan, not the queue.",
            first.probe.rows, first.label
        ),
    })
}

fn round(x: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    (x * f).round() / f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::DbSample;
    use crate::backend::figures::TableReads as Counters;

    fn sample(t_s: f64, seq_scans: i64, seq_rows: i64) -> DbStatsRow {
        DbStatsRow {
            t_s,
            phase: "fresh".into(),
            sample: DbSample {
                reads: Some(Counters {
                    seq_scans,
                    seq_rows,
                    index_scans: 0,
                    index_rows: 0,
                }),
                ..DbSample::default()
            },
        }
    }

    fn second(second: i64, claim_statements: u64) -> TimelineRow {
        TimelineRow {
            second,
            phase: "fresh".into(),
            claim_statements,
            ..TimelineRow::default()
        }
    }

    fn timeline(claims: u64) -> Vec<TimelineRow> {
        (0..10).map(|s| second(s, claims)).collect()
    }

    #[test]
    fn a_claim_that_scans_a_growing_table_is_called_out_with_its_stretch() {
        // Two scans per claim (claim and completion) of a table growing by 600 rows a second,
        // for the first 3 s; then the plan changed and only the reaper's scan is left. The
        // first second's scans read a table of a few hundred rows: not yet the hazard.
        let rows = vec![
            sample(0.0, 0, 0),
            sample(1.0, 1200, 360_000),
            sample(2.0, 2400, 1_800_000),
            sample(3.0, 3600, 3_960_000),
            sample(4.0, 3601, 3_962_400),
            sample(5.0, 3601, 3_962_400),
        ];
        let s = scanned_by_counters(&rows, &timeline(600), &|_| true).unwrap();
        assert_eq!((s.from_s, s.until_s), (1.0, 3.0));
        assert_eq!(s.seq_scans_per_claim, 2.0);
        assert_eq!(s.rows_per_scan, 1500.0);
        assert!(
            s.sentence.contains("from 1 s to 3 s (2.0 scans per claim"),
            "{}",
            s.sentence
        );
        assert!(s.sentence.ends_with("measure that plan, not the queue."));
    }

    #[test]
    fn the_harness_s_own_scans_and_small_tables_are_not_a_scanning_claim() {
        // The reaper's one scan a second of a big table.
        let reaper: Vec<DbStatsRow> = (0..6).map(|i| sample(i as f64, i, i * 50_000)).collect();
        assert_eq!(
            scanned_by_counters(&reaper, &timeline(600), &|_| true),
            None
        );
        // Every claim scans, but the table has a few hundred rows: the planner is right to.
        let small: Vec<DbStatsRow> = (0..6)
            .map(|i| sample(i as f64, i * 600, i * 600 * 300))
            .collect();
        assert_eq!(scanned_by_counters(&small, &timeline(600), &|_| true), None);
        // Scans by the harness's own readers (active_readers) are theirs.
        let readers: Vec<DbStatsRow> = (0..6)
            .map(|i| sample(i as f64, i * 20, i * 20 * 50_000))
            .collect();
        assert!(scanned_by_counters(&readers, &timeline(10), &|_| true).is_some());
        assert_eq!(
            scanned_by_counters(&readers, &timeline(10), &|_| false),
            None
        );
    }

    #[test]
    fn a_mariadb_probe_that_reads_the_whole_table_is_called_out() {
        let probe = |label: &str, plan: &str, rows: i64| ClaimProbeSummary {
            label: label.into(),
            at_s: 60.0,
            buffers: 0,
            probe: crate::backend::ClaimProbe {
                rows,
                plan: vec![plan.into()],
                ..Default::default()
            },
        };
        let index = probe("end", "ref using idx_job_queue_pending on job_queue", 1);
        let empty = probe("start", "ALL on job_queue", 0);
        assert_eq!(scanned_by_probes(&[empty.clone(), index.clone()]), None);
        let full = probe("end", "ALL on job_queue", 40_000);
        let s = scanned_by_probes(&[empty, full]).unwrap();
        assert!(
            s.sentence.contains("40000 rows at \"end\""),
            "{}",
            s.sentence
        );
    }
}
