//! One second of the run as the recorder gathers it (counts, the queue depth sampled in it,
//! its latencies), that second as a row of the timeline, and the interval log's header.

use super::histogram::{MAX_US, Metric, MetricSet};
use super::measurements::{PhaseCounts, TimelineRow};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::{IntervalLogWriter, IntervalLogWriterBuilder, Tag};
use std::time::{Duration, SystemTime};

/// The interval log's header: one interval per second from `start`, values in µs.
pub(super) fn interval_log(start: SystemTime) -> IntervalLogWriterBuilder {
    let mut builder = IntervalLogWriterBuilder::new();
    builder
        .add_comment("dbq-bench latency log: one interval per second, values in microseconds")
        .add_comment("tags: enqueue schedule_lag claim queue_wait handler end_to_end")
        .with_start_time(start)
        .with_base_time(start);
    builder
}

#[derive(Default)]
pub(super) struct SecondBucket {
    pub(super) counts: PhaseCounts,
    pub(super) depth: Option<i64>,
    pub(super) metrics: MetricSet,
}

impl SecondBucket {
    /// Its histograms as the interval log's intervals of second `s`, one tag per metric.
    pub(super) fn log_into<W: std::io::Write>(
        &self,
        s: i64,
        log: &mut IntervalLogWriter<'_, '_, W, V2DeflateSerializer>,
    ) {
        let start = Duration::from_secs(s.max(0) as u64);
        for m in Metric::ALL {
            let h = self.metrics.get(m);
            if !h.is_empty() {
                // Writing into memory cannot fail.
                log.write_histogram(h, start, Duration::from_secs(1), Tag::new(m.name()))
                    .ok();
            }
        }
    }

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
