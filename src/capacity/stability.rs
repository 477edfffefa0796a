//! The answer in three parts, read from a confirmation whose whole tries carried the
//! standard upset: the **stable capacity** (the highest rate that held and recovered on
//! every one of `runs` fresh queues), the **vulnerable band** (rates above it that held
//! until an upset came, and in how many of their tries, but did not recover from one) and
//! the **sustaining effect** that kept them from recovering, named from the samples.

use super::confirm::{Confirmation, Try};
use super::upset::Upset;
use serde::{Deserialize, Serialize};

/// The three parts of the answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stability {
    /// The highest rate that held and recovered on `runs` of `runs` fresh queues.
    pub stable_per_s: Option<f64>,
    pub runs: u32,
    pub upset: Upset,
    /// The slowest recovery at the stable rate, seconds after the upset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovered_after_s: Option<f64>,
    /// Rates above the stable one that held untriggered in at least one try and did not
    /// recover from every upset they met (or met none), lowest first.
    pub band: Vec<BandRate>,
    /// What kept the lowest rate of the band from recovering (absent without a band).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sustaining: Option<String>,
}

/// One rate of the vulnerable band.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BandRate {
    pub rate: f64,
    /// Tries at this rate (screens and whole tries, the load machine's disturbances aside).
    pub tries: u32,
    /// Tries in which it held until an upset came: a screen that held, or a whole try whose
    /// first window (before the upset) met the objective.
    pub held_untriggered: u32,
    /// Whole tries that reached the upset, and how many recovered.
    pub upsets: u32,
    pub recovered: u32,
    /// Whole tries, and how many held through the upset and every window after it.
    #[serde(default)]
    pub wholes: u32,
    #[serde(default)]
    pub wholes_held: u32,
}

/// What kept a rate's queue from holding: the figures of an upset it did not recover from,
/// else what limited the window that broke after an upset it recovered from.
fn sustained(rate: f64, tries: &[&Try]) -> Option<String> {
    let at = || tries.iter().filter(move |t| t.rate == rate && !t.screen);
    let unrecovered = at().find_map(|t| t.upset.as_ref().filter(|u| !u.recovered));
    if let Some(u) = unrecovered {
        return Some(u.evidence.sustaining());
    }
    at().filter(|t| !t.held).find_map(|t| {
        let broke = t.windows.iter().find(|w| !w.passed)?;
        let limit = broke.limit.as_ref().map_or("no limit found".into(), |l| {
            format!("limited by {}", l.kind.label())
        });
        Some(format!(
            "a window after the upset broke ({}), {limit}",
            broke.why.join("; ")
        ))
    })
}

impl Stability {
    /// The three parts, when the confirmation's whole tries carried an upset.
    pub fn of(c: &Confirmation) -> Option<Stability> {
        let upset = c.upset?;
        let stable = c.confirmed_per_s();
        let judged: Vec<&Try> = c.tries.iter().filter(|t| !t.disturbed).collect();
        let above = |t: &&&Try| stable.is_none_or(|s| t.rate > s);
        let mut rates: Vec<f64> = judged.iter().filter(above).map(|t| t.rate).collect();
        rates.sort_by(f64::total_cmp);
        rates.dedup();
        let band: Vec<BandRate> = rates
            .into_iter()
            .map(|r| BandRate::of(r, &judged))
            // A rate whose every whole try held is short of runs, not vulnerable.
            .filter(|b| b.held_untriggered > 0 && !(b.wholes > 0 && b.wholes_held == b.wholes))
            .collect();
        let sustaining = band.iter().find_map(|b| sustained(b.rate, &judged));
        let recovered_after_s = stable.and_then(|s| {
            judged
                .iter()
                .filter(|t| t.rate == s && t.held)
                .filter_map(|t| t.upset.as_ref()?.recovered_after_s)
                .reduce(f64::max)
        });
        Some(Stability {
            stable_per_s: stable,
            runs: c.runs,
            upset,
            recovered_after_s,
            band,
            sustaining,
        })
    }

    /// The sentence every output gives: the stable rate, the band above it and what
    /// sustained the backlog there.
    pub fn sentence(&self) -> String {
        let upset = self.upset.phrase();
        let within = self.upset.recover_within.as_secs_f64();
        let stable = match self.stable_per_s {
            Some(s) => format!(
                " Stable capacity: {s:.0} jobs/s, which held and recovered from {upset} on {k} of {k} fresh queues{}.",
                self.recovered_after_s
                    .map_or(String::new(), |r| format!(", back within {r:.1} s")),
                k = self.runs
            ),
            None => format!(
                " No rate held and recovered from {upset} within {within:.0} s on {k} of {k} fresh queues: no stable capacity.",
                k = self.runs
            ),
        };
        let band = match (self.band.first(), self.band.last()) {
            (Some(lo), Some(hi)) => format!(
                " Vulnerable band: {} held until a trigger came ({}) but did not hold through {upset}, {within:.0} s to recover and the windows after{}: there it holds only as long as no trigger comes.",
                match lo.rate == hi.rate {
                    true => format!("{:.0} jobs/s", lo.rate),
                    false => format!("{:.0}–{:.0} jobs/s", lo.rate, hi.rate),
                },
                self.band
                    .iter()
                    .map(BandRate::phrase)
                    .collect::<Vec<_>>()
                    .join("; "),
                self.sustaining
                    .as_ref()
                    .map_or(String::new(), |s| format!(" (sustained by {s})"))
            ),
            _ => String::new(),
        };
        stable + &band
    }
}

impl BandRate {
    /// "1056: held untriggered in 2 of 2 tries, recovered from 1 of 1 upsets".
    fn phrase(&self) -> String {
        let upsets = match self.upsets {
            0 => "not tried with the upset".to_string(),
            n => format!("recovered from {} of {n} upsets", self.recovered),
        };
        format!(
            "{:.0}: held untriggered in {} of {} tries, {upsets}",
            self.rate, self.held_untriggered, self.tries
        )
    }

    fn of(rate: f64, tries: &[&Try]) -> BandRate {
        let at: Vec<&&Try> = tries.iter().filter(|t| t.rate == rate).collect();
        let untriggered = |t: &&&&Try| match t.screen {
            true => t.held,
            false => t.windows.first().is_some_and(|w| w.passed),
        };
        let upsets: Vec<_> = at.iter().filter_map(|t| t.upset.as_ref()).collect();
        let wholes: Vec<_> = at.iter().filter(|t| !t.screen).collect();
        BandRate {
            rate,
            tries: at.len() as u32,
            held_untriggered: at.iter().filter(untriggered).count() as u32,
            upsets: upsets.len() as u32,
            recovered: upsets.iter().filter(|u| u.recovered).count() as u32,
            wholes: wholes.len() as u32,
            wholes_held: wholes.iter().filter(|t| t.held).count() as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::Step;
    use crate::capacity::upset::{Evidence, UpsetEffect};
    use crate::scenario::UpsetKind;
    use std::path::PathBuf;

    fn window(rate: f64, passed: bool) -> Step {
        Step {
            offered_per_s: rate,
            consumers: 8,
            completed_per_s: rate,
            e2e_p50_ms: 1.0,
            e2e_p99_ms: 2.0,
            backlog_slope_per_s: 0.0,
            sent_late_pct: 0.0,
            passed,
            why: vec![],
            load_generator_limited: false,
            upkeep: Default::default(),
            limit: None,
            disturbed: false,
            dir: PathBuf::new(),
        }
    }

    /// A whole try: its first window (before the upset) held or not, and the upset after it
    /// recovered or not (the try holds when both did).
    fn whole(rate: f64, settled: bool, recovered: bool) -> Try {
        let evidence = Evidence {
            backlog_slope_per_s: Some(if recovered { 0.0 } else { 105.0 }),
            workers_busy: Some(1.0),
            ..Evidence::default()
        };
        Try {
            rate,
            screen: false,
            held: settled && recovered,
            window_s: 30.0,
            windows: vec![window(rate, settled)],
            disturbed: false,
            hold: None,
            upset: settled.then(|| UpsetEffect {
                kind: UpsetKind::Pause,
                at_s: 33.0,
                until_s: 34.0,
                baseline_backlog: Some(5.0),
                peak_backlog: Some(2800),
                recovered_after_s: recovered.then_some(2.5),
                recover_within_s: 30.0,
                recovered,
                backlog: vec![],
                evidence,
            }),
            upset_windows: vec![],
            dir: PathBuf::new(),
        }
    }

    fn screen(rate: f64, held: bool) -> Try {
        Try {
            screen: true,
            held,
            upset: None,
            ..whole(rate, held, true)
        }
    }

    fn confirmation(tries: Vec<Try>) -> Confirmation {
        Confirmation {
            held_for_s: 180.0,
            basis: "3 min".into(),
            first_vacuum: None,
            screen_s: 60.0,
            hold_horizon_s: None,
            tries,
            remeasured: 0,
            load_machine_limited: false,
            upset: Some(Upset::default()),
            runs: 2,
        }
    }

    #[test]
    fn the_stable_rate_held_on_every_queue_and_the_band_held_only_untriggered() {
        let c = confirmation(vec![
            screen(2800.0, true),
            screen(3500.0, false),
            whole(2800.0, true, false),
            whole(2380.0, true, true),
            whole(2380.0, true, false),
            whole(2023.0, true, true),
            whole(2023.0, true, true),
        ]);
        let s = Stability::of(&c).unwrap();
        assert_eq!(s.stable_per_s, Some(2023.0));
        assert_eq!(s.recovered_after_s, Some(2.5));
        let band: Vec<(f64, u32, u32)> = s
            .band
            .iter()
            .map(|b| (b.rate, b.held_untriggered, b.tries))
            .collect();
        // 2380 recovered once and not the second time; 2800 held its screen and its first
        // window; 3500 broke before any upset: above the band.
        assert_eq!(band, [(2380.0, 2, 2), (2800.0, 2, 2)]);
        assert_eq!(
            s.sustaining.as_deref(),
            Some("the backlog growing +105 jobs/s, the workers 100 % busy")
        );
        let sentence = s.sentence();
        assert!(
            sentence.contains("Stable capacity: 2023 jobs/s")
                && sentence.contains("on 2 of 2 fresh queues, back within 2.5 s")
                && sentence.contains("Vulnerable band: 2380–2800 jobs/s")
                && sentence.contains("2380: held untriggered in 2 of 2 tries, recovered from 1 of 2 upsets; 2800: held untriggered in 2 of 2 tries, recovered from 0 of 1 upsets"),
            "{sentence}"
        );
    }

    #[test]
    fn without_an_upset_there_are_no_three_parts() {
        let mut c = confirmation(vec![whole(100.0, true, true)]);
        c.upset = None;
        assert_eq!(Stability::of(&c), None);
        // One whole try that held is not yet stable on two queues.
        let c = confirmation(vec![whole(100.0, true, true)]);
        assert_eq!(c.confirmed_per_s(), None);
        let s = Stability::of(&c).unwrap();
        assert!(
            s.sentence().contains("no stable capacity"),
            "{}",
            s.sentence()
        );
    }
}
