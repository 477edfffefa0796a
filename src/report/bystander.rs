//! The `bystander` section of summary.json: what the queue's load cost an unrelated
//! workload on the same server, against the same workload measured alone before the load.

use super::setup::RunSetup;
use crate::metrics::{LatencyReport, LatencySummary, PhaseCounts};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BystanderSummary {
    /// Statements per second offered (point reads and single-row updates, alternately).
    pub rate_per_s: f64,
    pub rows: u32,
    /// Alone, before the load (no queue load at all); `None` when not measured.
    pub quiet: Option<LatencySummary>,
    /// During the measured phases, with the queue's load.
    pub under_load: LatencySummary,
    /// Statements that failed during the measured phases.
    pub errors: u64,
    /// Under load minus alone, ms.
    pub added_p50_ms: Option<f64>,
    pub added_p99_ms: Option<f64>,
}

impl BystanderSummary {
    /// From the measured phases' latency and counts; `None` when the run had no bystander.
    pub fn of(
        setup: &RunSetup,
        quiet: Option<LatencySummary>,
        latency: &LatencyReport,
        counts: &PhaseCounts,
    ) -> Option<Self> {
        let b = setup.bystander?;
        let under_load = latency.bystander;
        let added = |f: fn(&LatencySummary) -> f64| {
            quiet
                .filter(|_| under_load.count > 0)
                .map(|q| ((f(&under_load) - f(&q)) * 1000.0).round() / 1000.0)
        };
        Some(BystanderSummary {
            rate_per_s: b.rate_per_s,
            rows: b.rows,
            quiet,
            under_load,
            errors: counts.bystander_errors,
            added_p50_ms: added(|l| l.p50),
            added_p99_ms: added(|l| l.p99),
        })
    }

    /// One sentence for the terminal and the reports.
    pub fn sentence(&self) -> String {
        let l = &self.under_load;
        let alone = match (&self.quiet, self.added_p99_ms) {
            (Some(q), Some(added)) if added > 0.0 => format!(
                "; alone p50 {:.2} ms, p99 {:.2} ms: the queue added {added:.2} ms to its p99",
                q.p50, q.p99
            ),
            (Some(q), Some(_)) => format!(
                "; alone p50 {:.2} ms, p99 {:.2} ms: no added p99 measurable ({} statements alone)",
                q.p50, q.p99, q.count
            ),
            _ => "; not measured alone".into(),
        };
        let errors = match self.errors {
            0 => String::new(),
            n => format!(", {n} statement(s) failed"),
        };
        format!(
            "Bystander ({:.0} point reads and updates per second on {} rows of an unrelated table): p50 {:.2} ms, p99 {:.2} ms under the queue's load{alone}{errors}.",
            self.rate_per_s, self.rows, l.p50, l.p99
        )
    }
}
