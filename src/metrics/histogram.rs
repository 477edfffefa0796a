//! Latency histograms: one HDR histogram (µs, 3 significant digits, up to 1 hour) per metric.
//! Percentiles always come from histograms; histograms are merged with `add`, never averaged.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest recordable latency: one hour in µs. Longer values are clamped to it.
pub const MAX_US: u64 = 3_600_000_000;

/// What is timed. Job metrics (`enqueue`, `schedule_lag`, `queue_wait`, `end_to_end`) start at
/// the job's intended enqueue time, so a stalled producer or a backlog shows up as latency
/// rather than as missing samples (no coordinated omission).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    /// Intended enqueue time → insert committed (closed loop: insert sent → committed).
    Enqueue,
    /// Intended enqueue time → insert sent (open loop only).
    ScheduleLag,
    /// Claim statement sent → returned a job.
    Claim,
    /// Intended enqueue time → claimed by a worker.
    QueueWait,
    /// Time spent in the simulated handler.
    Handler,
    /// Intended enqueue time → `done` committed.
    EndToEnd,
    /// A bystander's statement (a point read or a single-row update of an unrelated
    /// table): intended time → answered.
    Bystander,
}

impl Metric {
    pub const ALL: [Metric; 7] = [
        Metric::Enqueue,
        Metric::ScheduleLag,
        Metric::Claim,
        Metric::QueueWait,
        Metric::Handler,
        Metric::EndToEnd,
        Metric::Bystander,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Metric::Enqueue => "enqueue",
            Metric::ScheduleLag => "schedule_lag",
            Metric::Claim => "claim",
            Metric::QueueWait => "queue_wait",
            Metric::Handler => "handler",
            Metric::EndToEnd => "end_to_end",
            Metric::Bystander => "bystander",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

pub fn empty() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_US, 3).expect("static histogram bounds are valid")
}

/// One histogram per metric.
#[derive(Debug, Clone)]
pub struct MetricSet {
    hists: [Histogram<u64>; 7],
}

impl Default for MetricSet {
    fn default() -> Self {
        MetricSet {
            hists: std::array::from_fn(|_| empty()),
        }
    }
}

impl MetricSet {
    pub fn record(&mut self, metric: Metric, us: u64) {
        self.hists[metric.index()].saturating_record(us.min(MAX_US));
    }

    /// Records `us` for `n` jobs at once (a prefill batch).
    pub fn record_n(&mut self, metric: Metric, us: u64, n: u64) {
        let _ = self.hists[metric.index()].record_n(us.min(MAX_US), n);
    }

    pub fn get(&self, metric: Metric) -> &Histogram<u64> {
        &self.hists[metric.index()]
    }

    pub fn add(&mut self, other: &MetricSet) {
        for (a, b) in self.hists.iter_mut().zip(&other.hists) {
            // Same bounds on both sides: addition cannot fail.
            a.add(b).ok();
        }
    }
}

/// Percentiles of one histogram in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LatencySummary {
    pub count: u64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub mean: f64,
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

impl LatencySummary {
    pub fn of(h: &Histogram<u64>) -> LatencySummary {
        if h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            count: h.len(),
            p50: ms(h.value_at_quantile(0.50)),
            p90: ms(h.value_at_quantile(0.90)),
            p99: ms(h.value_at_quantile(0.99)),
            p999: ms(h.value_at_quantile(0.999)),
            max: ms(h.max()),
            mean: h.mean().round() / 1000.0,
        }
    }
}

/// Percentiles of every metric, as written to summary.json.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LatencyReport {
    pub enqueue: LatencySummary,
    pub schedule_lag: LatencySummary,
    pub claim: LatencySummary,
    pub queue_wait: LatencySummary,
    pub handler: LatencySummary,
    pub end_to_end: LatencySummary,
    /// The bystander's statements (`[bystander]`); empty without one.
    #[serde(default)]
    pub bystander: LatencySummary,
}

impl LatencyReport {
    pub fn of(set: &MetricSet) -> LatencyReport {
        let s = |m| LatencySummary::of(set.get(m));
        LatencyReport {
            enqueue: s(Metric::Enqueue),
            schedule_lag: s(Metric::ScheduleLag),
            claim: s(Metric::Claim),
            queue_wait: s(Metric::QueueWait),
            handler: s(Metric::Handler),
            end_to_end: s(Metric::EndToEnd),
            bystander: s(Metric::Bystander),
        }
    }

    /// (name, summary) pairs in a fixed order, for tables; the bystander only when a run
    /// had one.
    pub fn rows(&self) -> Vec<(&'static str, &LatencySummary)> {
        let all = [
            ("enqueue", &self.enqueue),
            ("schedule_lag", &self.schedule_lag),
            ("claim", &self.claim),
            ("queue_wait", &self.queue_wait),
            ("handler", &self.handler),
            ("end_to_end", &self.end_to_end),
            ("bystander", &self.bystander),
        ];
        let had = |(name, l): &(&str, &LatencySummary)| *name != "bystander" || l.count > 0;
        all.into_iter().filter(had).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_percentiles_come_from_the_merged_histogram() {
        let mut a = MetricSet::default();
        let mut b = MetricSet::default();
        for _ in 0..99 {
            a.record(Metric::EndToEnd, 1_000);
        }
        b.record(Metric::EndToEnd, 500_000);
        a.add(&b);
        let s = LatencySummary::of(a.get(Metric::EndToEnd));
        assert_eq!(s.count, 100);
        assert_eq!(s.p50, 1.0);
        assert!(s.max >= 499.0 && s.max <= 501.0, "{s:?}");
    }

    #[test]
    fn values_beyond_an_hour_are_clamped_not_lost() {
        let mut a = MetricSet::default();
        a.record(Metric::QueueWait, u64::MAX);
        assert_eq!(a.get(Metric::QueueWait).len(), 1);
    }
}
