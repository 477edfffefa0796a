//! What limited a capacity answer: the limit named in the window that broke just above the
//! answer (the lowest-rate try, or else search step, that broke the objective for the queue's
//! own reasons), or the answer's own window when nothing above it broke; and what the load
//! machine's stalls cost the search (windows measured again, and whether they kept coming).

use super::confirm::Confirmation;
use super::{Capacity, Step};
use crate::report::limit::Limit;
use serde::{Deserialize, Serialize};

/// The limit of a capacity answer, and where it was read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerLimit {
    /// The window it was read from: `2,125 jobs/s (screen 3, window 2)`.
    pub at: String,
    #[serde(flatten)]
    pub limit: Limit,
}

impl AnswerLimit {
    /// `What limited it: the workers at 2125 jobs/s (…): …; add workers …`.
    pub fn sentence(&self) -> String {
        format!(
            " What limited it: {} at {}: {}; {}.",
            self.limit.kind.label(),
            self.at,
            self.limit.evidence,
            self.limit.action
        )
    }
}

/// A window that broke, or the one read for the answer, with where it was.
fn at(rate: f64, place: String, w: &Step) -> Option<AnswerLimit> {
    Some(AnswerLimit {
        at: format!("{rate:.0} jobs/s ({place})"),
        limit: w.limit.clone()?,
    })
}

/// The limit of an answer `answer` (None: no rate held): the lowest rate above it whose
/// window broke for the queue's own reasons; with none, the answer's own last window.
pub fn of_answer(
    answer: Option<f64>,
    steps: &[Step],
    confirmation: Option<&Confirmation>,
) -> Option<AnswerLimit> {
    let above = |rate: f64| answer.is_none_or(|a| rate > a);
    let mut broke: Vec<(f64, AnswerLimit)> = Vec::new();
    let mut held: Option<AnswerLimit> = None;
    for (i, t) in confirmation
        .map_or(&[][..], |c| &c.tries[..])
        .iter()
        .enumerate()
    {
        let kind = if t.screen { "screen" } else { "try" };
        for (j, w) in t.windows.iter().enumerate() {
            let place = format!("{kind} {}, window {}", i + 1, j + 1);
            if !w.passed && !w.disturbed && above(t.rate) {
                broke.extend(at(t.rate, place, w).map(|l| (t.rate, l)));
                break;
            }
            if w.passed && answer == Some(t.rate) {
                held = at(t.rate, place, w).or(held);
            }
        }
    }
    for (i, s) in steps.iter().enumerate() {
        let place = format!("search step {}", i + 1);
        if !s.passed && !s.disturbed && above(s.offered_per_s) {
            broke.extend(at(s.offered_per_s, place, s).map(|l| (s.offered_per_s, l)));
        } else if s.passed && answer == Some(s.offered_per_s) && confirmation.is_none() {
            held = at(s.offered_per_s, place, s).or(held);
        }
    }
    broke
        .into_iter()
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, l)| l)
        .or(held)
}

impl Capacity {
    /// Steps and tries measured again because the load machine stalled.
    pub fn remeasured(&self) -> u32 {
        let steps = self.steps.iter().filter(|s| s.disturbed).count() as u32;
        steps + self.confirmation.as_ref().map_or(0, |c| c.remeasured)
    }

    /// The sentence on the load machine's stalls, empty when none broke a window.
    pub fn stalls_sentence(&self) -> String {
        let n = self.remeasured();
        if self.load_machine_limited {
            let last = self
                .max_sustainable_per_s
                .map_or("none held".to_string(), |r| format!("{r:.0} jobs/s"));
            format!(
                " The load machine limited the measurement: it stalled in a window that broke and again each time that window was measured again ({n} measurement(s) again in all); the last rate that held cleanly: {last}. A quieter or larger load machine would measure above it."
            )
        } else if n > 0 {
            format!(
                " The load machine stalled in {n} window(s) that broke; each was measured again, not judged."
            )
        } else {
            String::new()
        }
    }
}
