//! The headline figures of a run, one source for every comparison of runs: the matrix's
//! comparison table and the `compare` regression gate read them the same way.

use crate::metrics::LatencySummary;
use crate::report::Summary;

/// A headline figure: its key, its column heading, which way is better, and how it is read
/// from a run's summary.
pub struct Figure {
    pub key: &'static str,
    pub heading: &'static str,
    /// More is better (throughput) or less is (latency, bloat, lost jobs).
    pub higher_is_better: bool,
    /// Why `compare` shows it without judging it; `None`: gated.
    pub ungated_because: Option<&'static str>,
    pub read: fn(&Summary) -> f64,
}

/// The figures compared, in column order.
pub const FIGURES: [Figure; 12] = [
    Figure {
        key: "throughput_per_s",
        higher_is_better: true,
        ungated_because: None,
        heading: "jobs/s while busy",
        read: busy_throughput,
    },
    Figure {
        key: "completed_per_s",
        higher_is_better: true,
        ungated_because: None,
        heading: "jobs/s over the window",
        read: |s| s.throughput.completed_per_s,
    },
    Figure {
        key: "e2e_p50_ms",
        higher_is_better: false,
        ungated_because: None,
        heading: "e2e p50 ms",
        read: |s| measured(&s.latency_ms.end_to_end, |l| l.p50),
    },
    Figure {
        key: "e2e_p99_ms",
        higher_is_better: false,
        ungated_because: None,
        heading: "e2e p99 ms",
        read: |s| measured(&s.latency_ms.end_to_end, |l| l.p99),
    },
    Figure {
        key: "claim_p50_ms",
        higher_is_better: false,
        ungated_because: None,
        heading: "claim p50 ms",
        read: |s| measured(&s.latency_ms.claim, |l| l.p50),
    },
    Figure {
        key: "dead_tuples_max",
        higher_is_better: false,
        ungated_because: Some("follows when autovacuum happened to run, not the change"),
        heading: "dead tuples (max)",
        read: |s| {
            s.db_stats
                .per_phase
                .iter()
                .map(|p| p.dead_tuples_max)
                .max()
                .unwrap_or(0) as f64
        },
    },
    Figure {
        key: "table_mb_end",
        higher_is_better: false,
        ungated_because: Some("follows when autovacuum happened to run, not the change"),
        heading: "table MB (end)",
        read: |s| {
            s.db_stats
                .per_phase
                .iter()
                .rev()
                .find(|p| p.total_bytes_end > 0)
                .map_or(0.0, |p| p.total_bytes_end as f64 / 1e6)
        },
    },
    Figure {
        key: "bystander_p99_ms",
        higher_is_better: false,
        ungated_because: Some("another workload's tail: too noisy on a shared runner"),
        heading: "bystander p99 ms",
        read: |s| {
            s.bystander
                .as_ref()
                .map_or(f64::NAN, |b| measured(&b.under_load, |l| l.p99))
        },
    },
    Figure {
        key: "wal_bytes_per_job",
        higher_is_better: false,
        ungated_because: Some("a cost figure: shown to explain a change, not gated"),
        heading: "WAL bytes/job",
        read: |s| s.cost.wal_bytes_per_job.unwrap_or(f64::NAN),
    },
    Figure {
        key: "bytes_per_1k_jobs",
        higher_is_better: false,
        ungated_because: Some("follows when autovacuum happened to run, not the change"),
        heading: "table+index bytes/1k jobs",
        read: |s| s.cost.bytes_per_1k_jobs.unwrap_or(f64::NAN),
    },
    Figure {
        key: "sent_late_pct",
        higher_is_better: false,
        ungated_because: Some("the load generator's figure, not the queue's"),
        heading: "sent late %",
        read: |s| s.verdict.sent_late_pct,
    },
    Figure {
        key: "lost",
        higher_is_better: false,
        ungated_because: None,
        heading: "lost",
        read: |s| s.jobs.lost as f64,
    },
];

/// A latency statistic, or NaN (shown as "–") when nothing was measured: a prefilled
/// backlog's jobs were intended before the measured window.
pub fn measured(l: &LatencySummary, stat: fn(&LatencySummary) -> f64) -> f64 {
    if l.count == 0 { f64::NAN } else { stat(l) }
}

/// Completed jobs per second of the measured phases' busy time (until each phase's last
/// finished job): the consumers' rate while they had work, which a drained backlog does not
/// dilute. Equal to the window's rate when they never ran out.
pub fn busy_throughput(s: &Summary) -> f64 {
    let measured = s.phases.iter().filter(|p| p.measured);
    let (jobs, busy) = measured.fold((0u64, 0.0f64), |(j, b), p| {
        (
            j + p.jobs.completed,
            b + p.busy_s.unwrap_or(p.duration_s).min(p.duration_s),
        )
    });
    if busy > 0.0 {
        jobs as f64 / busy
    } else {
        s.throughput.completed_per_s
    }
}
