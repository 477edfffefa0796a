//! The verdict: did the queue keep up with the load over the whole measured window, and if
//! not, whose limit was it (the queue's, or the load generator's). One rule for `run` and the
//! studies built on it; [`completions_kept_up`] is the capacity search's rule too.
//!
//! Rules: the backlog is judged second by second (its peak, not only its two ends); every
//! reason carries its figures; a run whose workers scanned the table says so.

use super::article;
use super::phases::{PhaseSummary, ProducerUse, Throughput};
use crate::metrics::{PhaseCounts, TimelineRow};
use serde::{Deserialize, Serialize};

/// How much of the offered load may wait above the backlog's start, at any moment, in a
/// run that keeps up (besides one idle poll's arrivals): a few seconds' stall is a hiccup,
/// more is falling behind.
pub const PEAK_SLACK_S: f64 = 2.0;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub completed_per_s: f64,
    pub seed_reference_per_s: f64,
    /// completed_per_s / seed_reference_per_s.
    pub multiple_of_reference: f64,
    /// Producers kept their schedule (at most 1% of jobs sent late).
    pub producers_kept_schedule: bool,
    /// Jobs of the measured phases sent late or not at all, as a share of those their
    /// schedules intended, in percent: the figure the verdict's text and `compare` give.
    #[serde(default)]
    pub sent_late_pct: f64,
    /// Consumers kept up: over the measured window, neither the backlog (sampled from the
    /// database) grew by more than the tolerance from start to end, nor rose above its start
    /// by more than `peak_growth_allowed` in any second, nor the completion gap (jobs
    /// enqueued minus jobs finished) grew by more than the tolerance plus the jobs in flight.
    pub consumers_kept_up: bool,
    /// max(10 jobs, 2% of the jobs enqueued in the window).
    pub tolerance_jobs: i64,
    /// Jobs in the system at any moment by Little's law (completed rate × p50 end-to-end):
    /// those in flight when the window closed, which the completion gap may include.
    #[serde(default)]
    pub in_flight_jobs: f64,
    pub backlog_growth: Option<i64>,
    pub completion_gap: i64,
    pub queue_depth_start: Option<i64>,
    pub queue_depth_end: Option<i64>,
    /// The most jobs waiting in any second of the measured window, and when (seconds since
    /// the load started).
    #[serde(default)]
    pub queue_depth_peak: Option<i64>,
    #[serde(default)]
    pub queue_depth_peak_at_s: Option<i64>,
    /// How far the backlog may rise above its start at any moment and still count as
    /// keeping up: [`PEAK_SLACK_S`] of the offered load plus one idle poll's arrivals.
    #[serde(default)]
    pub peak_growth_allowed: i64,
    /// Seconds in which the backlog was further above its start than that.
    #[serde(default)]
    pub behind_s: u64,
    pub kept_up: bool,
    /// Kept up, limited by the load generator, or did not keep up.
    #[serde(default)]
    pub state: VerdictState,
    pub text: String,
    /// The capacity result the text cites (`run --capacity DIR`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<article::CapacityCitation>,
    /// The workers' statements scanned the queue table during the measured phases: the
    /// figures measure that plan, not the queue (`table_reads.scanned` says when).
    #[serde(default)]
    pub table_scanned: bool,
}

/// The verdict in one word. `LoadGeneratorLimited`: the producers missed their schedule
/// while the consumers kept up and the harness's own timer was late as often (its machine
/// was saturated), so the shortfall is the harness's, not the queue's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictState {
    #[default]
    KeptUp,
    LoadGeneratorLimited,
    DidNotKeepUp,
    /// Interrupted, or stopped by an error, before its window ended: not judged.
    Incomplete,
}

impl VerdictState {
    /// The verdict's opening words.
    pub fn headline(self) -> &'static str {
        match self {
            VerdictState::KeptUp => "Kept up",
            VerdictState::LoadGeneratorLimited => "Limited by the load generator",
            VerdictState::DidNotKeepUp => "Did not keep up",
            VerdictState::Incomplete => "Incomplete",
        }
    }
}

/// Why the producers' late jobs were late: a job due while every producer connection the
/// fleet may open was busy goes out late however fast the queue drains. When at least half
/// of the late jobs were late that way, more connections (`producers.max_count`) would have
/// sent them on time: the load generator's limit, not the queue's, set the pace.
pub struct ProducerPace {
    late: u64,
    late_behind: u64,
    used: ProducerUse,
}

impl ProducerPace {
    pub fn of(counts: &PhaseCounts, used: ProducerUse) -> ProducerPace {
        // A dropped job was due while every producer was still busy: behind, by definition.
        ProducerPace {
            late: counts.sent_late + counts.dropped,
            late_behind: counts.sent_late_behind + counts.dropped,
            used,
        }
    }

    fn too_few(&self) -> bool {
        self.late > 0 && 2 * self.late_behind >= self.late
    }

    fn behind_pct(&self) -> f64 {
        100.0 * self.late_behind as f64 / self.late.max(1) as f64
    }
}

/// The backlog over the measured window, from the per-second samples of jobs waiting.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Backlog {
    pub start: Option<i64>,
    pub end: Option<i64>,
    /// The most jobs waiting in any second, and the second (since the load started).
    pub peak: Option<(i64, i64)>,
    /// How far above `start` the backlog may rise ([`PEAK_SLACK_S`] of the offered load plus
    /// one idle poll's arrivals, at least 10 jobs).
    pub allowed: i64,
    /// Seconds further above the start than `allowed`, with the first and the last.
    pub behind: Option<(u64, i64, i64)>,
}

impl Backlog {
    /// `rows`: the measured phases' seconds; `rate`: jobs/s offered (or enqueued, in closed
    /// loop); `poll_s`: the workers' sleep after an empty claim.
    pub fn of(rows: &[&TimelineRow], rate: f64, poll_s: f64) -> Backlog {
        let depths: Vec<(i64, i64)> = rows
            .iter()
            .filter_map(|r| Some((r.second, r.queue_depth?)))
            .collect();
        let start = depths.first().map(|d| d.1);
        let allowed = (rate * (PEAK_SLACK_S + poll_s)).round().max(10.0) as i64;
        let far: Vec<i64> = depths
            .iter()
            .filter(|(_, d)| start.is_some_and(|s| d - s > allowed))
            .map(|(t, _)| *t)
            .collect();
        Backlog {
            start,
            end: depths.last().map(|d| d.1),
            peak: depths
                .iter()
                .map(|&(t, d)| (d, t))
                .max_by_key(|&(d, t)| (d, -t)),
            allowed,
            behind: far
                .first()
                .zip(far.last())
                .map(|(a, b)| (far.len() as u64, *a, *b)),
        }
    }

    /// Why the backlog's peak broke the rule, with its figures.
    fn reason(&self, recovered: bool) -> Option<String> {
        let (seconds, from, until) = self.behind?;
        let (peak, at) = self.peak?;
        let above = peak - self.start.unwrap_or(0);
        let end = if recovered {
            "; it recovered by the end of the window"
        } else {
            ""
        };
        Some(format!(
            "the backlog rose to {peak} jobs at {at} s, {above} above its start (at most {} allowed: {PEAK_SLACK_S:.0} s of the offered load and one idle poll), and was that far behind for {seconds} s between {from} s and {until} s{end}",
            self.allowed
        ))
    }

    /// A backlog still standing at the end (a prefill not worked off, a drain measured):
    /// not kept up, however fast it fell.
    fn standing(&self) -> Option<i64> {
        self.end.filter(|e| *e > self.allowed)
    }

    /// Why a standing backlog is not kept up, unless the backlog's rise already says so.
    fn standing_reason(&self) -> Option<String> {
        let end = self.standing().filter(|_| self.behind.is_none())?;
        Some(format!(
            "{end} jobs still waited at the end of the measured phases (a queue that keeps up holds at most {}: {PEAK_SLACK_S:.0} s of the offered load and one idle poll)",
            self.allowed
        ))
    }

    fn describe(&self) -> String {
        match (self.start, self.end, self.peak) {
            (Some(s), Some(e), Some((p, at))) => {
                format!("backlog {s} → {e} jobs (at most {p}, at {at} s)")
            }
            _ => "backlog not sampled".to_string(),
        }
    }
}

/// A run that did not end as planned (`why`: interrupted, stopped by an error) is not
/// judged: its window is cut where it stopped, so its backlog and gap say nothing about
/// whether the queue kept up. The figures stay, under an "Incomplete" headline.
pub fn not_judged(verdict: &mut Verdict, why: &str) {
    let figures = verdict
        .text
        .split_once(". ")
        .map_or(String::new(), |(_, rest)| format!(" {rest}"));
    verdict.state = VerdictState::Incomplete;
    verdict.kept_up = false;
    verdict.text = format!(
        "Incomplete: {why} before the measured window ended, so whether the queue kept up is not judged; the figures cover the part measured.{figures}"
    );
}

/// Names the first phase that fell behind; a run `interrupted` or stopped by a `fatal`
/// error is not judged.
pub fn settle(
    verdict: &mut Verdict,
    phases: &[PhaseSummary],
    interrupted: bool,
    fatal: Option<&str>,
) {
    name_the_first_phase_behind(verdict, phases);
    if interrupted {
        not_judged(verdict, "interrupted (Ctrl-C)");
    } else if let Some(e) = fatal {
        not_judged(verdict, &format!("stopped by an error ({e})"));
    }
}

/// A run that did not keep up names the first phase that fell behind.
pub fn name_the_first_phase_behind(verdict: &mut Verdict, phases: &[PhaseSummary]) {
    let first_behind = phases.iter().find(|p| p.kept_up == Some(false));
    if verdict.state == VerdictState::DidNotKeepUp
        && let Some(p) = first_behind
    {
        verdict.text.push_str(&format!(
            " The first phase that did not keep up: \"{}\" at {} jobs/s offered ({:.0} completed/s).",
            p.name,
            p.offered.as_deref().unwrap_or("?"),
            p.throughput.completed_per_s
        ));
    }
}

/// A verdict on measured phases the workers' statements scanned the table through says so:
/// it judged that plan, not the queue.
pub fn caveat_scanned(
    verdict: &mut Verdict,
    scanned: &super::reads::Scanned,
    phases: &[PhaseSummary],
) {
    let overlaps = phases
        .iter()
        .any(|p| p.measured && scanned.overlaps(p.start_s, p.start_s + p.duration_s));
    if overlaps {
        verdict.table_scanned = true;
        verdict.text.push(' ');
        verdict.text.push_str(&scanned.sentence);
    }
}

/// How far the backlog, or the enqueued-minus-finished gap, may grow over a window and still
/// count as keeping up: max(10 jobs, 2% of the window's jobs).
fn gap_tolerance(enqueued: u64) -> f64 {
    (enqueued as f64 * 0.02).max(10.0)
}

/// The jobs in the system at any moment, by Little's law: completed rate × p50 end-to-end
/// latency. Those still in flight when a window closes are not a backlog.
pub fn jobs_in_flight(completed_per_s: f64, end_to_end_p50_ms: f64) -> f64 {
    completed_per_s * end_to_end_p50_ms / 1000.0
}

/// Whether completions kept up with what was sent over a window (the verdict's and the
/// capacity search's rule): the gap between jobs enqueued and jobs finished (done or dead
/// letter) within [`gap_tolerance`] plus the jobs in flight ([`jobs_in_flight`]).
pub fn completions_kept_up(enqueued: u64, finished: u64, in_flight: f64) -> bool {
    enqueued as f64 - finished as f64 <= gap_tolerance(enqueued) + in_flight
}

/// The verdict's opening: its headline, and for a run that did not simply keep up, why, and
/// whose limit it was.
fn verdict_head(
    state: VerdictState,
    harness: Option<&crate::metrics::HarnessSummary>,
    producers: &ProducerPace,
    late: &str,
    reasons: &[String],
) -> String {
    let harness_saturated = harness.is_some_and(|h| h.saturated());
    match (state, harness) {
        (VerdictState::KeptUp, _) => state.headline().to_string(),
        (VerdictState::LoadGeneratorLimited, Some(h)) if producers.too_few() => format!(
            "{}: producers missed their schedule ({late}) while the consumers kept up; {:.0}% of the late jobs were due while every producer connection was busy ({}), so more connections (producers.max_count) would have sent them on time ({})",
            state.headline(),
            producers.behind_pct(),
            producers.used.describe(),
            h.describe()
        ),
        (VerdictState::LoadGeneratorLimited, Some(h)) => format!(
            "{}: producers missed their schedule ({late}) while the consumers kept up, and {}; the queue kept up with what was sent, so this is not the queue's limit",
            state.headline(),
            h.describe()
        ),
        (VerdictState::DidNotKeepUp, Some(h)) if harness_saturated => format!(
            "{}: {}, while the machine was saturated ({}): the harness, the workers and the server share its cores, so part of the shortfall may be the machine's, not the queue's",
            state.headline(),
            reasons.join(" and "),
            h.describe()
        ),
        _ => format!("{}: {}", state.headline(), reasons.join(" and ")),
    }
}

/// The share of jobs sent late, in percent, and its wording. Jobs never sent (their phase
/// ended first) are as late as jobs can be.
fn lateness(counts: &PhaseCounts, scheduled: u64) -> (f64, String) {
    let late_pct = 100.0 * (counts.sent_late + counts.dropped) as f64
        / (scheduled + counts.dropped).max(1) as f64;
    let late = match counts.dropped {
        0 => format!("{late_pct:.1}% of jobs sent late"),
        n => format!(
            "{late_pct:.1}% of jobs sent late or not at all: {n} never sent before their phase ended"
        ),
    };
    (late_pct, late)
}

/// `backlog`: the measured phases' backlog second by second; `scheduled`: jobs the
/// measured phases' schedules intended, the denominator of the late share (both counted by
/// intended time).
pub fn judge(
    backlog: &Backlog,
    t: &Throughput,
    counts: &PhaseCounts,
    end_to_end_p50_ms: f64,
    scheduled: u64,
    harness: Option<&crate::metrics::HarnessSummary>,
    producers: &ProducerPace,
) -> Verdict {
    let multiple = t.completed_per_s / article::FEW_HUNDRED_PER_S;
    let (late_pct, late) = lateness(counts, scheduled);
    let producers_kept_schedule = late_pct <= 1.0;
    let (start, end) = (backlog.start, backlog.end);
    let backlog_growth = start.zip(end).map(|(s, e)| e - s);
    let finished = counts.completed + counts.dead_lettered;
    let completion_gap = counts.enqueued as i64 - finished as i64;
    let in_flight = jobs_in_flight(t.completed_per_s, end_to_end_p50_ms);
    let tolerance_jobs = gap_tolerance(counts.enqueued) as i64;
    let ends_kept_up = completions_kept_up(counts.enqueued, finished, in_flight)
        && backlog_growth.is_none_or(|g| g <= tolerance_jobs);
    let consumers_kept_up =
        ends_kept_up && backlog.behind.is_none() && backlog.standing().is_none();
    let kept_up = producers_kept_schedule && consumers_kept_up;
    let harness_saturated = harness.is_some_and(|h| h.saturated());
    let state = if kept_up {
        VerdictState::KeptUp
    } else if consumers_kept_up && (harness_saturated || producers.too_few()) {
        VerdictState::LoadGeneratorLimited
    } else {
        VerdictState::DidNotKeepUp
    };

    let offered = t
        .offered_per_s
        .map_or("max (closed loop)".to_string(), |r| {
            format!("{r:.0} jobs/s")
        });
    let depth = backlog.describe();
    let mut reasons = Vec::new();
    if !producers_kept_schedule {
        reasons.push(format!("producers missed their schedule ({late})"));
    }
    if !ends_kept_up {
        reasons.push(format!(
            "consumers fell behind ({completion_gap} more jobs enqueued than finished)"
        ));
    }
    reasons.extend(backlog.reason(ends_kept_up));
    reasons.extend(backlog.standing_reason());
    let head = verdict_head(state, harness, producers, &late, &reasons);
    let text = format!(
        "{head}. {:.0} jobs/s completed over {:.0} s measured = {}; offered {offered}; {depth}; {late_pct:.1}% of jobs sent late.",
        t.completed_per_s,
        t.window_s,
        article::multiple(t.completed_per_s),
    );
    Verdict {
        completed_per_s: t.completed_per_s,
        seed_reference_per_s: article::FEW_HUNDRED_PER_S,
        multiple_of_reference: (multiple * 100.0).round() / 100.0,
        producers_kept_schedule,
        sent_late_pct: (late_pct * 100.0).round() / 100.0,
        consumers_kept_up,
        tolerance_jobs,
        in_flight_jobs: (in_flight * 10.0).round() / 10.0,
        backlog_growth,
        completion_gap,
        queue_depth_start: start,
        queue_depth_end: end,
        queue_depth_peak: backlog.peak.map(|p| p.0),
        queue_depth_peak_at_s: backlog.peak.map(|p| p.1),
        peak_growth_allowed: backlog.allowed,
        behind_s: backlog.behind.map_or(0, |b| b.0),
        kept_up,
        state,
        text,
        capacity: None,
        table_scanned: false,
    }
}

#[cfg(test)]
mod tests;
