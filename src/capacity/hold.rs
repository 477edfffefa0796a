//! A held horizon as a condition of the confirmation (`capacity.hold_horizon`). After the
//! confirmation's clean windows, a session holds a transaction with an XID open, so VACUUM
//! removes nothing, for the hold's length at the same rate: windows judged as the clean ones
//! are. Then recovery windows, measured but not judged, show how long the queue takes to be
//! back within its pre-hold range once the hold is released.

use super::Step;
use crate::report::RunResults;
use crate::report::dbstats::DbStatsRow;
use crate::report::faults::Recovery;
use crate::scenario::{FaultSpec, HumanDuration};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Names of the windows while the horizon is held, and after.
pub const HELD: &str = "held-";
pub const RECOVERY: &str = "recovery-";

/// How long the recovery windows last after a hold of `hold`.
pub fn recovery_length(hold: Duration) -> Duration {
    hold.clamp(Duration::from_secs(10), Duration::from_secs(300))
}

/// The fault the first held window carries: the horizon held for the whole hold.
pub fn fault(hold: Duration) -> FaultSpec {
    FaultSpec::IdleInTransaction {
        hold: Some(HumanDuration(hold)),
    }
}

/// What the held horizon did to the queue, and how long it took to recover.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HoldEffect {
    /// How long the horizon was held, seconds (from the fault's own record).
    pub held_s: f64,
    /// The windows while it was held, judged.
    pub windows: Vec<Step>,
    /// The windows after its release, measured and not judged.
    pub recovery: Vec<Step>,
    /// How long the recovery windows were planned to last, seconds.
    pub recovery_s: f64,
    /// Dead tuples added to the queue table per minute while it was held.
    pub dead_tuples_per_min: Option<f64>,
    /// Jobs waiting in the second it was released.
    pub backlog_at_release: Option<i64>,
    /// How the backlog, the completions and the claim came back after the release, against
    /// the five seconds before the hold.
    pub recovery_detail: Recovery,
    /// Until both the backlog and the claim p50 were back within their pre-hold range,
    /// seconds after the release; `None`: not within the recovery windows.
    pub recovered_after_s: Option<f64>,
}

impl HoldEffect {
    /// Reads the hold's record (the fault event), the samples taken while it was held and
    /// the timeline after it; `None` when no hold ran.
    pub fn of(
        results: &RunResults,
        windows: Vec<Step>,
        (recovery, recovery_s): (Vec<Step>, f64),
    ) -> Option<Self> {
        let event = results
            .summary
            .faults
            .events
            .iter()
            .find(|e| e.kind == "idle_in_transaction")?;
        let (from, to) = (event.at_s, event.until_s);
        let held: Vec<_> = results
            .db_stats
            .iter()
            .filter(|r| r.t_s >= from && r.t_s <= to)
            .collect();
        let dead_tuples_per_min = match (held.first(), held.last()) {
            (Some(a), Some(b)) if b.t_s - a.t_s >= 1.0 => {
                let dead = |r: &DbStatsRow| r.sample.versions.map_or(0, |v| v.dead);
                Some((dead(b) - dead(a)) as f64 * 60.0 / (b.t_s - a.t_s))
            }
            _ => None,
        };
        let released = to.floor() as i64;
        let r = &event.recovery;
        let recovered_after_s = match (r.backlog_recovered_after_s, r.baseline_claim_p50_ms) {
            (Some(b), None) => Some(b),
            (Some(b), Some(_)) => r.claim_recovered_after_s.map(|c| b.max(c)),
            (None, _) => None,
        };
        Some(HoldEffect {
            held_s: to - from,
            windows,
            recovery,
            recovery_s,
            dead_tuples_per_min,
            backlog_at_release: results
                .timeline
                .iter()
                .find(|t| t.second == released)
                .and_then(|t| t.queue_depth),
            recovery_detail: r.clone(),
            recovered_after_s,
        })
    }

    /// One sentence: what the hold did and how long recovery took.
    pub fn sentence(&self) -> String {
        let dead = self
            .dead_tuples_per_min
            .map_or("dead tuples not sampled".into(), |d| {
                format!("{d:.0} dead tuples/min")
            });
        let claims: Vec<String> = self
            .windows
            .iter()
            .map(|w| format!("{:.2}", w.upkeep.claim_p50_ms))
            .collect();
        let trend = format!("claim p50 by window {} ms", claims.join(" → "));
        let recovered = match self.recovered_after_s {
            Some(s) => format!("back within its pre-hold range {s:.0} s after the release"),
            None => format!(
                "not back within its pre-hold range in the {:.0} s measured after the release",
                self.recovery_s
            ),
        };
        format!(
            "Horizon held {:.0} s: {dead}, {trend}, backlog {} at the release; the queue was {recovered}.",
            self.held_s,
            self.backlog_at_release
                .map_or("unknown".into(), |b| b.to_string()),
        )
    }
}
