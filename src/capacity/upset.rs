//! The standard upset (`capacity.upset`). Once a whole confirmation's queue has settled (its
//! first window), every worker stops taking jobs for a second (`pause`: a deploy, a GC
//! pause) or the producers send a second of extra arrivals (`burst`). The queue *recovers*
//! when its backlog is back at its level before the upset within `recover_within` of the
//! upset's end; the windows after that are judged as before, so it must also stay. A rate
//! that holds until an upset comes and does not recover from one is *vulnerable*: whether
//! it holds is a draw of when a trigger comes. What kept it from recovering (the sustaining
//! effect) is read from the samples of the recovery span.

use crate::report::RunResults;
use crate::scenario::{FaultSpec, HumanDuration, PhaseSection, Rate, UpsetKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// Names of the upset's phases: measured, not judged.
pub const UPSET: &str = "upset-";
const BURST_PHASE: &str = "upset-burst";
const RECOVERY_PHASE: &str = "upset-recovery";
/// Seconds of backlog kept from before the upset, for its chart.
const SHOWN_BEFORE_S: i64 = 10;

/// What upsets a settled queue, how much, and how soon it must recover.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Upset {
    pub kind: UpsetKind,
    /// The pause's length, or the burst's extra seconds of arrivals.
    pub size: Duration,
    pub recover_within: Duration,
}

impl Default for Upset {
    fn default() -> Self {
        Upset {
            kind: UpsetKind::Pause,
            size: Duration::from_secs(1),
            recover_within: Duration::from_secs(30),
        }
    }
}

impl Upset {
    /// No upset (and what results of older versions carried).
    pub fn none() -> Upset {
        Upset {
            kind: UpsetKind::None,
            ..Upset::default()
        }
    }

    pub fn is_on(&self) -> bool {
        self.kind != UpsetKind::None
    }

    /// "a 1s pause of every worker", "a burst of 1s of extra arrivals".
    pub fn phrase(&self) -> String {
        let size = HumanDuration(self.size);
        match self.kind {
            UpsetKind::Pause => format!("a {size} pause of every worker"),
            UpsetKind::Burst => format!("a burst of {size} of extra arrivals"),
            UpsetKind::None => "no upset".into(),
        }
    }

    /// The upset's phases at `rate`, measured and not judged: a pause at the start of one
    /// phase as long as the pause and its recovery span; or a burst at twice the rate,
    /// then the recovery span.
    pub fn phases(&self, rate: f64) -> Vec<PhaseSection> {
        let phase = |name: &str, duration: Duration, rate: f64| PhaseSection {
            name: name.into(),
            duration: HumanDuration(duration),
            rate: Some(Rate::PerSecond(rate)),
            measured: true,
            faults: Vec::new(),
            thresholds: BTreeMap::new(),
        };
        match self.kind {
            UpsetKind::None => Vec::new(),
            UpsetKind::Pause => {
                let mut p = phase(RECOVERY_PHASE, self.size + self.recover_within, rate);
                p.faults.push(FaultSpec::PauseWorkers {
                    after: HumanDuration(Duration::ZERO),
                    hold: HumanDuration(self.size),
                });
                vec![p]
            }
            UpsetKind::Burst => vec![
                phase(BURST_PHASE, self.size, 2.0 * rate),
                phase(RECOVERY_PHASE, self.recover_within, rate),
            ],
        }
    }

    /// When the upset began and ended in a run, seconds since the load started: the pause's
    /// own record, or the burst phase; `None` when the run did not get that far.
    fn span(&self, results: &RunResults) -> Option<(f64, f64)> {
        let s = &results.summary;
        match self.kind {
            UpsetKind::None => None,
            UpsetKind::Pause => s
                .faults
                .events
                .iter()
                .find(|e| e.kind == "pause_workers")
                .map(|e| (e.at_s, e.until_s)),
            UpsetKind::Burst => s
                .phases
                .iter()
                .find(|p| p.name == BURST_PHASE)
                .filter(|p| p.duration_s >= 0.99 * self.size.as_secs_f64())
                .map(|p| (p.start_s, p.start_s + p.duration_s)),
        }
    }
}

/// What the upset did to one try's queue, and whether it came back in time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpsetEffect {
    pub kind: UpsetKind,
    /// When it began and ended, seconds since the load started.
    pub at_s: f64,
    pub until_s: f64,
    /// Jobs waiting, on average, in the five seconds before it.
    pub baseline_backlog: Option<f64>,
    /// The most jobs waiting from its start to the end of the recovery span.
    pub peak_backlog: Option<i64>,
    /// Until the backlog was back within its level before the upset, seconds after its end.
    pub recovered_after_s: Option<f64>,
    pub recover_within_s: f64,
    /// Back within `recover_within` (the recovery span ran whole).
    pub recovered: bool,
    /// Jobs waiting each second from shortly before the upset to the end of the recovery
    /// span: (seconds from the upset's start, jobs).
    pub backlog: Vec<(f64, i64)>,
    /// What the recovery span's samples show.
    pub evidence: Evidence,
}

/// The recovery span's figures against the seconds before the upset.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub claim_p50_before_ms: Option<f64>,
    pub claim_p50_after_ms: Option<f64>,
    /// The queue's indexes together, KB/s over the recovery span.
    pub index_growth_kb_per_s: Option<f64>,
    pub dead_tuples_per_s: Option<f64>,
    /// Share of the consumers busy over the recovery span.
    pub workers_busy: Option<f64>,
    /// How fast the backlog grew over the recovery span, jobs/s.
    pub backlog_slope_per_s: Option<f64>,
}

impl UpsetEffect {
    /// Reads the upset off a try's results; `None` when the try ended before it.
    pub fn of(results: &RunResults, upset: &Upset, consumers: u32) -> Option<UpsetEffect> {
        let (at, until) = upset.span(results)?;
        let within = upset.recover_within.as_secs_f64();
        let timeline = &results.timeline;
        let r = crate::report::faults::recovery(timeline, at, until);
        let end = until + within;
        let ran_whole = results
            .summary
            .phases
            .iter()
            .find(|p| p.name == RECOVERY_PHASE)
            .is_some_and(|p| p.duration_s >= 0.99 * within);
        let shown = timeline
            .iter()
            .filter(|t| t.second >= at.floor() as i64 - SHOWN_BEFORE_S && (t.second as f64) < end);
        let backlog: Vec<(f64, i64)> = shown
            .filter_map(|t| Some((t.second as f64 - at.floor(), t.queue_depth?)))
            .collect();
        let recovered_after_s = r.backlog_recovered_after_s;
        Some(UpsetEffect {
            kind: upset.kind,
            at_s: at,
            until_s: until,
            baseline_backlog: r.baseline_queue_depth,
            peak_backlog: backlog.iter().filter(|b| b.0 >= 0.0).map(|b| b.1).max(),
            recovered_after_s,
            recover_within_s: within,
            recovered: ran_whole && recovered_after_s.is_some_and(|s| s <= within),
            backlog,
            evidence: Evidence::of(results, (at, until, end), consumers),
        })
    }

    /// One sentence: how far the backlog went and whether it came back in time.
    pub fn sentence(&self) -> String {
        let peak = self
            .peak_backlog
            .map_or("unknown".to_string(), |p| p.to_string());
        let before = self
            .baseline_backlog
            .map_or("unknown".to_string(), |b| format!("{b:.0}"));
        let back = match (self.recovered, self.recovered_after_s) {
            (true, Some(s)) => format!("back at its level {s:.1} s after the upset"),
            (false, Some(s)) => format!(
                "back only {s:.1} s after the upset, later than the {:.0} s allowed",
                self.recover_within_s
            ),
            (_, None) => format!(
                "not back at its level within the {:.0} s allowed: {}",
                self.recover_within_s,
                self.evidence.sustaining()
            ),
        };
        format!("backlog {before} before the upset, {peak} at its peak, {back}")
    }
}

impl Evidence {
    fn of(results: &RunResults, (at, until, end): (f64, f64, f64), consumers: u32) -> Evidence {
        let timeline = &results.timeline;
        let seconds = |from: f64, to: f64| {
            timeline
                .iter()
                .filter(move |t| (t.second as f64) >= from.floor() && (t.second as f64) < to)
        };
        let claims = |from: f64, to: f64| {
            let v: Vec<f64> = seconds(from, to).filter_map(|t| t.claim_p50_ms).collect();
            median(&v)
        };
        let span: Vec<_> = seconds(until, end).collect();
        let busy: Vec<f64> = span.iter().map(|t| t.workers_busy).collect();
        let depths: Vec<(f64, f64)> = span
            .iter()
            .filter_map(|t| Some((t.second as f64, t.queue_depth? as f64)))
            .collect();
        let rows: Vec<_> = results
            .db_stats
            .iter()
            .filter(|r| r.t_s >= until && r.t_s <= end)
            .collect();
        let per_s = |f: &dyn Fn(&crate::report::dbstats::DbStatsRow) -> Option<f64>| {
            let (a, b) = (rows.first()?, rows.last()?);
            let dt = b.t_s - a.t_s;
            (dt >= 1.0).then_some((f(b)? - f(a)?) / dt)
        };
        Evidence {
            claim_p50_before_ms: claims(at - 10.0, at),
            claim_p50_after_ms: claims((end - 5.0).max(until), end),
            index_growth_kb_per_s: per_s(&|r| {
                let s = &r.sample.index_bytes;
                (!s.is_empty()).then(|| s.values().sum::<i64>() as f64 / 1024.0)
            }),
            dead_tuples_per_s: per_s(&|r| r.sample.versions.map(|v| v.dead as f64)),
            workers_busy: (!busy.is_empty() && consumers > 0)
                .then(|| busy.iter().sum::<f64>() / busy.len() as f64 / consumers as f64),
            backlog_slope_per_s: match (depths.first(), depths.last()) {
                (Some(a), Some(b)) if b.0 > a.0 => Some((b.1 - a.1) / (b.0 - a.0)),
                _ => None,
            },
        }
    }

    /// What sustained the backlog, from the figures that moved: "the backlog growing +105
    /// jobs/s, claims slowing 0.28 → 0.95 ms, the queue's indexes growing 80 KB/s, the
    /// workers 100 % busy"; "no figure moved" when none did.
    pub fn sustaining(&self) -> String {
        let mut parts = Vec::new();
        if let Some(s) = self.backlog_slope_per_s.filter(|s| *s > 1.0) {
            parts.push(format!("the backlog growing {s:+.0} jobs/s"));
        }
        if let (Some(b), Some(a)) = (self.claim_p50_before_ms, self.claim_p50_after_ms)
            && a > 1.3 * b
        {
            parts.push(format!("claims slowing {b:.2} → {a:.2} ms"));
        }
        if let Some(g) = self.index_growth_kb_per_s.filter(|g| *g >= 1.0) {
            parts.push(format!("the queue's indexes growing {g:.0} KB/s"));
        }
        if let Some(d) = self.dead_tuples_per_s.filter(|d| *d >= 1.0) {
            parts.push(format!("dead tuples {d:+.0}/s"));
        }
        if let Some(b) = self.workers_busy.filter(|b| *b >= 0.9) {
            parts.push(format!("the workers {:.0} % busy", 100.0 * b.min(1.0)));
        }
        match parts.is_empty() {
            true => "no figure of the queue moved".into(),
            false => parts.join(", "),
        }
    }
}

/// The median of `v`; `None` when empty.
fn median(v: &[f64]) -> Option<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sustaining_effect_names_the_figures_that_moved() {
        let e = Evidence {
            claim_p50_before_ms: Some(0.28),
            claim_p50_after_ms: Some(0.95),
            index_growth_kb_per_s: Some(80.0),
            dead_tuples_per_s: Some(0.0),
            workers_busy: Some(1.0),
            backlog_slope_per_s: Some(105.0),
        };
        assert_eq!(
            e.sustaining(),
            "the backlog growing +105 jobs/s, claims slowing 0.28 → 0.95 ms, the queue's indexes growing 80 KB/s, the workers 100 % busy"
        );
        assert_eq!(
            Evidence::default().sustaining(),
            "no figure of the queue moved"
        );
    }

    #[test]
    fn each_kind_has_its_phases() {
        let pause = Upset::default();
        let p = pause.phases(100.0);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].duration.0, Duration::from_secs(31));
        assert!(matches!(p[0].faults[0], FaultSpec::PauseWorkers { .. }));
        let burst = Upset {
            kind: UpsetKind::Burst,
            size: Duration::from_secs(2),
            ..Upset::default()
        };
        let b = burst.phases(100.0);
        assert_eq!(b[0].rate, Some(Rate::PerSecond(200.0)));
        assert_eq!(b[0].duration.0, Duration::from_secs(2));
        assert_eq!(b[1].rate, Some(Rate::PerSecond(100.0)));
        assert!(Upset::none().phases(100.0).is_empty());
    }
}
