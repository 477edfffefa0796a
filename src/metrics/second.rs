//! One second of the run as the recorder gathers it (counts, the queue depth sampled in it,
//! its latencies), and that second as a row of the timeline.

use super::histogram::{MAX_US, Metric, MetricSet};
use super::measurements::{PhaseCounts, TimelineRow};

#[derive(Default)]
pub(super) struct SecondBucket {
    pub(super) counts: PhaseCounts,
    pub(super) depth: Option<i64>,
    pub(super) metrics: MetricSet,
}

impl SecondBucket {
    /// The second `s` (since the load started) of phase `phase`, as a timeline row.
    pub(super) fn row(&self, s: i64, phase: String) -> TimelineRow {
        let (b, e2e) = (self, self.metrics.get(Metric::EndToEnd));
        let lag = b.metrics.get(Metric::ScheduleLag);
        let pct = |h: &hdrhistogram::Histogram<u64>, q: f64| {
            (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1000.0)
        };
        TimelineRow {
            second: s,
            phase,
            enqueued: b.counts.enqueued,
            completed: b.counts.completed,
            failed: b.counts.failed,
            dead_lettered: b.counts.dead_lettered,
            enqueue_errors: b.counts.enqueue_errors,
            worker_errors: b.counts.worker_errors,
            queue_depth: b.depth,
            claim_statements: b.counts.claim_statements,
            e2e_p50_ms: pct(e2e, 0.5),
            e2e_p99_ms: pct(e2e, 0.99),
            e2e_max_ms: (!e2e.is_empty()).then(|| e2e.max().min(MAX_US) as f64 / 1000.0),
            schedule_lag_max_ms: (!lag.is_empty()).then(|| lag.max() as f64 / 1000.0),
            claim_p50_ms: pct(b.metrics.get(Metric::Claim), 0.5),
            bystander_p99_ms: pct(b.metrics.get(Metric::Bystander), 0.99),
            workers_busy: b.counts.workers_busy_us as f64 / 1e6,
            producers_busy: b.counts.producers_busy_us as f64 / 1e6,
        }
    }
}
