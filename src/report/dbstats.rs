//! Database statistics in the results: `db_stats.csv` (one row per sample) and, in
//! summary.json, what changed in each phase and what the run's sessions waited on.

use crate::backend::figures::TableReads;
use crate::backend::{DbSample, RowVersions};
use crate::metrics::Measurements;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod csv_file;
pub use csv_file::{read_csv, write_csv};

/// One sample, placed on the run's time axis.
#[derive(Debug, Clone, PartialEq)]
pub struct DbStatsRow {
    /// Seconds since the load started.
    pub t_s: f64,
    pub phase: String,
    pub sample: DbSample,
}

/// What changed in one phase: counters from the sample before its first to its last,
/// levels (dead tuples, bytes) from its first sample to its last.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PhaseDbStats {
    pub phase: String,
    pub samples: usize,
    pub commits: i64,
    pub rollbacks: i64,
    pub deadlocks: i64,
    pub wal_bytes: i64,
    pub autovacuums: i64,
    pub autoanalyzes: i64,
    /// Manual VACUUMs (the harness's own probes, a user's) of the queue table.
    #[serde(default)]
    pub vacuums: i64,
    pub dead_tuples_start: i64,
    pub dead_tuples_end: i64,
    /// The most dead tuples any sample of the phase saw.
    #[serde(default)]
    pub dead_tuples_max: i64,
    /// Jobs waiting at the phase's last sample.
    #[serde(default)]
    pub pending_end: i64,
    pub total_bytes_start: i64,
    pub total_bytes_end: i64,
    pub max_xmin_age_xids: i64,
    /// Checkpoints the server made during the phase.
    #[serde(default)]
    pub checkpoints: i64,
    /// Sessions of the run seen waiting, by wait event, summed over the phase's samples.
    pub wait_events: BTreeMap<String, i64>,
    /// A broker's own figures over the phase, by name.
    #[serde(default)]
    pub server: BTreeMap<String, ServerFigure>,
}

/// One of a broker's own figures over a phase: a level's last and highest value, or a
/// counter's increase and its rate per second between the samples that bound it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ServerFigure {
    pub end: i64,
    pub max: i64,
    /// Counters only (names ending in `_total`).
    #[serde(default)]
    pub per_s: Option<f64>,
}

impl ServerFigure {
    /// `name` over the samples `from` (the one before the phase, for counters) to `rows`'
    /// last.
    fn of(name: &str, from: &DbStatsRow, rows: &[&DbStatsRow]) -> Option<ServerFigure> {
        let value = |r: &DbStatsRow| r.sample.server.get(name).copied();
        let last = rows.last()?;
        let seconds = last.t_s - from.t_s;
        let per_s = (name.ends_with("_total") && seconds > 0.0)
            .then(|| Some((value(last)? - value(from)?) as f64 / seconds))
            .flatten();
        Some(ServerFigure {
            end: value(last)?,
            max: rows.iter().filter_map(|r| value(r)).max()?,
            per_s,
        })
    }
}

/// Every figure name any sample has, in order.
pub fn server_names(rows: &[DbStatsRow]) -> Vec<String> {
    rows.iter()
        .flat_map(|r| r.sample.server.keys().cloned())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DbStatsSummary {
    pub samples: usize,
    pub per_phase: Vec<PhaseDbStats>,
    /// Sessions of the run seen waiting, by wait event, summed over all samples.
    pub wait_events: BTreeMap<String, i64>,
}

/// Places every sample on the time axis and in its phase. The queue table's read counters
/// become everyone's but the sampler's: what its earlier samples read is taken out (a
/// sample's own reads reach the server's counters when its session next reports, before
/// the next sample; a stretch of samples is exact but for one sample's reads at its end).
pub fn rows(m: &Measurements) -> Vec<DbStatsRow> {
    let load_start = m.load_start_us();
    rows_of(m.db_samples.iter().map(|(at, sample)| {
        let phase = m
            .windows
            .iter()
            .find(|w| *at >= w.start_us && *at < w.end_us)
            .map_or("drain".into(), |w| w.name.clone());
        (
            (*at as f64 - load_start as f64) / 1e6,
            phase,
            sample.clone(),
        )
    }))
}

/// Samples (seconds, phase, sample) as rows, the sampler's earlier reads taken out: those
/// of them the server had been told of when the sample read its counters (all the earlier
/// samples' own reads but the ones still unreported then), so no row goes below zero.
pub fn rows_of(samples: impl IntoIterator<Item = (f64, String, DbSample)>) -> Vec<DbStatsRow> {
    let mut own_so_far = TableReads::default();
    samples
        .into_iter()
        .map(|(t_s, phase, mut sample)| {
            let unreported = sample.own_unreported.take().unwrap_or_default();
            let reported = own_so_far.minus(unreported);
            sample.reads = sample.reads.map(|r| r.minus(reported));
            own_so_far = own_so_far.plus(sample.own_reads.take().unwrap_or_default());
            DbStatsRow { t_s, phase, sample }
        })
        .collect()
}

/// A sample's row versions; none (all 0) on an engine that keeps none, whose phase
/// figures then count no cleanup and no dead versions.
fn versions(s: &DbSample) -> RowVersions {
    s.versions.unwrap_or_default()
}

pub fn summarize(rows: &[DbStatsRow], phases: &[String]) -> DbStatsSummary {
    let mut wait_events = BTreeMap::new();
    for r in rows {
        for (k, v) in &r.sample.wait_events {
            *wait_events.entry(k.clone()).or_insert(0) += v;
        }
    }
    let names = server_names(rows);
    let per_phase = phases
        .iter()
        .filter_map(|phase| {
            let phase_rows: Vec<&DbStatsRow> = rows.iter().filter(|r| &r.phase == phase).collect();
            let in_phase: Vec<&DbSample> = phase_rows.iter().map(|r| &r.sample).collect();
            let (start, last) = (in_phase.first()?, in_phase.last()?);
            // Counters count from the sample before the phase's first, so what happened
            // between two phases' samples (an autovacuum, commits, WAL) is not lost.
            let before = rows
                .iter()
                .position(|r| &r.phase == phase)
                .and_then(|i| i.checked_sub(1))
                .map_or(phase_rows[0], |i| &rows[i]);
            let first = &before.sample;
            let server = names
                .iter()
                .filter_map(|n| Some((n.clone(), ServerFigure::of(n, before, &phase_rows)?)))
                .collect();
            let mut waits = BTreeMap::new();
            for s in &in_phase {
                for (k, v) in &s.wait_events {
                    *waits.entry(k.clone()).or_insert(0) += v;
                }
            }
            Some(PhaseDbStats {
                phase: phase.clone(),
                samples: in_phase.len(),
                commits: last.xact_commit - first.xact_commit,
                rollbacks: last.xact_rollback - first.xact_rollback,
                deadlocks: last.deadlocks - first.deadlocks,
                wal_bytes: last.wal_bytes - first.wal_bytes,
                autovacuums: versions(last).autovacuums - versions(first).autovacuums,
                autoanalyzes: versions(last).autoanalyzes - versions(first).autoanalyzes,
                vacuums: versions(last).vacuums - versions(first).vacuums,
                dead_tuples_start: versions(start).dead,
                dead_tuples_end: versions(last).dead,
                dead_tuples_max: in_phase.iter().map(|s| versions(s).dead).max().unwrap_or(0),
                pending_end: last.pending,
                total_bytes_start: start.total_bytes,
                total_bytes_end: last.total_bytes,
                max_xmin_age_xids: in_phase
                    .iter()
                    .filter_map(|s| versions(s).horizon_age_xids)
                    .max()
                    .unwrap_or(0),
                checkpoints: last.checkpoints - first.checkpoints,
                wait_events: waits,
                server,
            })
        })
        .collect();
    DbStatsSummary {
        samples: rows.len(),
        per_phase,
        wait_events,
    }
}

impl ServerFigure {
    /// A counter's rate, a size in MB, or a count, each with the phase's highest level.
    fn cell(&self, name: &str) -> String {
        let mb = |b: i64| format!("{:.1}", b as f64 / 1_048_576.0);
        match self.per_s {
            Some(rate) => format!("{:.0}", rate),
            // A counter over a single sample has no rate.
            None if name.ends_with("_total") => "–".into(),
            None if name.ends_with("_bytes") => format!("{} (max {})", mb(self.end), mb(self.max)),
            None => format!("{} (max {})", self.end, self.max),
        }
    }
}

/// A broker's own figures, phase by phase, as one table for every format (header, rows);
/// `None` for a database, which has none of its own.
pub fn server_table(d: &DbStatsSummary) -> Option<(Vec<String>, Vec<Vec<String>>)> {
    let names: Vec<&String> = d
        .per_phase
        .iter()
        .flat_map(|p| p.server.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if names.is_empty() {
        return None;
    }
    let mut header = vec!["phase".to_string()];
    header.extend(names.iter().map(|n| match n.strip_suffix("_total") {
        Some(counter) => format!("{counter} /s"),
        None => match n.strip_suffix("_bytes") {
            Some(size) => format!("{size} MB, end"),
            None => format!("{n}, end"),
        },
    }));
    let rows = d
        .per_phase
        .iter()
        .map(|p| {
            let mut row = vec![p.phase.clone()];
            row.extend(
                names
                    .iter()
                    .map(|n| p.server.get(*n).map_or("–".into(), |f| f.cell(n))),
            );
            row
        })
        .collect();
    Some((header, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t_s: f64, phase: &str, autovacuums: i64, dead_tuples: i64) -> DbStatsRow {
        DbStatsRow {
            t_s,
            phase: phase.into(),
            sample: DbSample {
                versions: Some(RowVersions {
                    autovacuums,
                    dead: dead_tuples,
                    ..RowVersions::default()
                }),
                ..DbSample::default()
            },
        }
    }

    /// An autovacuum that ran between the last sample of one phase and the first of the
    /// next is the next phase's; the phases' counts add up to the run's.
    #[test]
    fn the_sampler_s_own_reads_are_taken_out_once_the_server_holds_them() {
        let reads = |seq_scans| TableReads {
            seq_scans,
            ..TableReads::default()
        };
        // Each sample scans once; the server is told of it only after the next sample.
        // The workers scan 10 times a second.
        let sample = |others: i64, flushed_own: i64, unreported: i64| DbSample {
            reads: Some(reads(others + flushed_own)),
            own_reads: Some(reads(1)),
            own_unreported: Some(reads(unreported)),
            ..DbSample::default()
        };
        let samples = [
            (0.0, "a".to_string(), sample(0, 0, 0)),
            (1.0, "a".to_string(), sample(10, 0, 1)),
            (2.0, "a".to_string(), sample(20, 2, 0)),
        ];
        let seq: Vec<i64> = rows_of(samples)
            .iter()
            .map(|r| r.sample.reads.unwrap().seq_scans)
            .collect();
        assert_eq!(seq, [0, 10, 20]);
    }

    #[test]
    fn counters_between_two_phases_samples_are_not_lost() {
        let rows = [
            row(1.0, "a", 0, 100),
            row(2.0, "a", 0, 200),
            row(3.0, "b", 1, 10),
            row(4.0, "b", 2, 50),
        ];
        let s = summarize(&rows, &["a".into(), "b".into()]);
        let counts: Vec<_> = s.per_phase.iter().map(|p| p.autovacuums).collect();
        assert_eq!(counts, [0, 2]);
        let b = &s.per_phase[1];
        assert_eq!((b.dead_tuples_start, b.dead_tuples_end), (10, 50));
    }

    fn broker_row(t_s: f64, phase: &str, acked_total: i64, unacked: i64) -> DbStatsRow {
        let mut r = row(t_s, phase, 0, 0);
        r.sample.versions = None;
        r.sample.server = BTreeMap::from([
            ("acked_total".to_string(), acked_total),
            ("unacked".to_string(), unacked),
        ]);
        r
    }

    /// A counter's rate runs from the sample before the phase to its last; a level keeps
    /// its last and highest value; both survive the CSV.
    #[test]
    fn a_brokers_own_figures_are_summarised_and_written() {
        let rows = [
            broker_row(1.0, "a", 100, 5),
            broker_row(2.0, "b", 300, 9),
            broker_row(3.0, "b", 500, 2),
        ];
        let s = summarize(&rows, &["a".into(), "b".into()]);
        let b = &s.per_phase[1].server;
        assert_eq!(b["acked_total"].per_s, Some(200.0));
        assert_eq!(
            (b["unacked"].end, b["unacked"].max, b["unacked"].per_s),
            (2, 9, None)
        );
        let mut csv = Vec::new();
        write_csv(&rows, &mut csv).unwrap();
        let back = read_csv(csv.as_slice()).unwrap();
        assert_eq!(back[2].sample.server, rows[2].sample.server);
        let (header, table) = server_table(&s).unwrap();
        assert_eq!(header, ["phase", "acked /s", "unacked, end"]);
        assert_eq!(table[1], ["b", "200", "2 (max 9)"]);
        assert!(server_table(&summarize(&[row(1.0, "a", 0, 0)], &["a".into()])).is_none());
    }
}
