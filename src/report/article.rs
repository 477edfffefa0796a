//! The seed article's claim in one place: a database queue is fine "up to a few hundred jobs
//! per second"; past thousands, use a broker. Every figure set against it says so in the
//! same words.

use super::design::DesignRecord;
use serde::{Deserialize, Serialize};

/// "A few hundred jobs per second", taken as 300 jobs/s.
pub const FEW_HUNDRED_PER_S: f64 = 300.0;

/// `rate` against the claim: `2.7× the article's "few hundred per second" (taken as 300/s)`.
pub fn multiple(rate: f64) -> String {
    format!(
        "{:.1}× the article's \"few hundred per second\" (taken as {FEW_HUNDRED_PER_S:.0}/s)",
        rate / FEW_HUNDRED_PER_S
    )
}

/// A capacity result the run's verdict cites (`run --capacity DIR`): the design's measured
/// capacity is the figure to hold against the claim, not the rate one run happened to offer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityCitation {
    /// Where the capacity result was read from.
    pub source: String,
    /// The design the capacity was measured for, whole.
    pub design: DesignRecord,
    pub max_sustainable_per_s: f64,
    /// The objective the capacity was found under.
    pub objective: String,
    /// Over what time the capacity held: `held for 3m on a fresh queue`, or unconfirmed.
    pub horizon: String,
}

impl CapacityCitation {
    /// The sentence the verdict ends with; `completed_per_s` is the run's own figure.
    pub fn sentence(&self, run_design: &DesignRecord, completed_per_s: f64) -> String {
        let share = 100.0 * completed_per_s / self.max_sustainable_per_s.max(1e-9);
        let differences = self.design.differences(run_design);
        let same = if differences.is_empty() {
            String::new()
        } else {
            format!(
                " (note: measured for a different design: {}; this run is {})",
                differences.join(", "),
                run_design.label()
            )
        };
        format!(
            " Capacity ({}): this design sustains {:.0} jobs/s with {} ({}) = {}; this run used {share:.0}% of it{same}.",
            self.source,
            self.max_sustainable_per_s,
            self.objective,
            self.horizon,
            multiple(self.max_sustainable_per_s)
        )
    }
}
