//! The gate's rules: which figures are judged, how much worse each may get, and the three
//! outcomes.
//!
//! A figure **regressed** when it got worse by more than its allowance and the change is
//! unlikely to be noise: the one-sided bound of its interval at 1 − α/m (α the false-alarm
//! rate, m the figures judged with repeats, Bonferroni) is on the worse side of no change.
//! It shows **no regression** when the one-sided bound at 1 − α on the worse side is inside
//! the allowance (showing every figure inside its allowance needs no correction: each must
//! pass on its own). Anything between is **inconclusive**, with the repeats that would decide
//! it. Lost jobs are counted, not sampled: any is a regression.

use super::stats::{LogChange, MAX_REPEATS};
use super::{Figures, ScopeFigures};
use crate::report::headline::FIGURES;
use serde::Serialize;
use std::collections::BTreeMap;

/// How `compare` judges: the allowances, the false-alarm rate, and what an inconclusive
/// figure does to the exit status.
#[derive(Debug, Clone)]
pub struct GateRules {
    /// How much worse each figure may get, as a share (0.1 = 10%).
    pub default_allowance: f64,
    /// Per-figure allowances; naming an ungated figure gates it.
    pub per_figure: BTreeMap<String, f64>,
    /// The chance that two measurements of one setting are called a regression (0.05).
    pub false_alarm_rate: f64,
    /// An inconclusive figure fails the gate (exit 99) instead of passing it with a warning.
    pub fail_inconclusive: bool,
    /// The differences in what the two sides measured that are judged anyway
    /// (`--allow-different`), each by its key.
    pub allowed: Vec<super::Key>,
}

impl Default for GateRules {
    fn default() -> Self {
        GateRules {
            default_allowance: 0.10,
            per_figure: BTreeMap::new(),
            false_alarm_rate: 0.05,
            fail_inconclusive: false,
            allowed: Vec::new(),
        }
    }
}

impl GateRules {
    fn allowance(&self, key: &str) -> f64 {
        self.per_figure
            .get(key)
            .copied()
            .unwrap_or(self.default_allowance)
    }

    /// From `--max-regression` values (`10%` for every figure, `e2e_p99_ms=20%` for one),
    /// `--false-alarm-rate` and `--inconclusive`.
    pub fn parse(
        max_regression: &[String],
        false_alarm_rate: Option<&str>,
        fail_inconclusive: bool,
    ) -> Result<GateRules, String> {
        let mut rules = GateRules {
            fail_inconclusive,
            ..GateRules::default()
        };
        for flag in max_regression {
            let (key, pct) = match flag.split_once('=') {
                Some((k, p)) => (Some(k.trim()), p),
                None => (None, flag.as_str()),
            };
            let share = percentage(pct, 0.0, 1000.0).ok_or_else(|| {
                format!("--max-regression {flag}: expected a percentage such as 10% (0 to 1000)")
            })?;
            match key {
                None => rules.default_allowance = share,
                Some(k) if gates().any(|g| g.key == k) => {
                    rules.per_figure.insert(k.to_string(), share);
                }
                Some(k) => {
                    return Err(format!(
                        "--max-regression {flag}: unknown figure {k}; figures: {}",
                        gates().map(|g| g.key).collect::<Vec<_>>().join(", ")
                    ));
                }
            }
        }
        if let Some(rate) = false_alarm_rate {
            rules.false_alarm_rate = percentage(rate, 0.1, 50.0).ok_or_else(|| {
                format!("--false-alarm-rate {rate}: expected a percentage from 0.1% to 50%")
            })?;
        }
        Ok(rules)
    }

    /// With the keys of `--allow-different` (each a comma-separated list).
    pub fn allowing(mut self, keys: &[String]) -> Result<GateRules, String> {
        for key in keys.iter().flat_map(|k| k.split(',')) {
            let key = super::Key::parse(key)?;
            if !self.allowed.contains(&key) {
                self.allowed.push(key);
            }
        }
        Ok(self)
    }
}

/// `10%` or `10` as 0.1, when within [lo, hi] percent.
fn percentage(text: &str, lo: f64, hi: f64) -> Option<f64> {
    let v = text.trim().trim_end_matches('%').parse::<f64>().ok()?;
    (v.is_finite() && v >= lo && v <= hi).then_some(v / 100.0)
}

/// A figure `compare` can judge, which way is better, and why it is not judged by default.
struct Gate {
    key: &'static str,
    higher_is_better: bool,
    ungated_because: Option<&'static str>,
    /// A change smaller than this (in the figure's unit) is not a regression.
    noise_floor: f64,
}

/// Latency below a tenth of a millisecond is the runner's scheduling, not the queue.
const LATENCY_FLOOR_MS: f64 = 0.1;

/// The headline figures of runs and matrix cells, and a capacity search's answer.
fn gates() -> impl Iterator<Item = Gate> {
    let headline = FIGURES.iter().map(|f| Gate {
        key: f.key,
        higher_is_better: f.higher_is_better,
        ungated_because: f.ungated_because,
        noise_floor: if f.key.ends_with("_ms") {
            LATENCY_FLOOR_MS
        } else {
            0.0
        },
    });
    let capacity = [("max_sustainable_per_s", true), ("min_consumers", false)].map(
        |(key, higher_is_better)| Gate {
            key,
            higher_is_better,
            ungated_because: None,
            noise_floor: 0.0,
        },
    );
    headline.chain(capacity)
}

/// What the gate concluded of one figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "verdict")]
pub enum Verdict {
    Regressed,
    NoRegression,
    /// The runs cannot tell a change of the allowed size from noise; `repeats_needed` per
    /// side would (`None`: more than the gate asks for, or unknown from single runs).
    Inconclusive {
        repeats_needed: Option<u32>,
    },
    /// Shown, not judged.
    NotGated,
}

/// One figure of one scope, judged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Judgement {
    pub scope: String,
    pub figure: &'static str,
    /// Runs on each side.
    pub runs: (usize, usize),
    /// Compared pair by pair (runs of the same name measured side by side).
    pub paired: bool,
    /// The figures `change` compares: geometric means where the change has an interval
    /// (`bounds`), medians otherwise, so that candidate ÷ baseline − 1 is the change shown.
    pub baseline: f64,
    pub candidate: f64,
    /// The change: the ratio of geometric means − 1 with repeats, of the values with one run.
    pub change: f64,
    /// The change's bounds the verdict used (regression side, no-regression side), when the
    /// runs had a spread to compute them.
    pub bounds: Option<(f64, f64)>,
    #[serde(flatten)]
    pub verdict: Verdict,
    /// Why, in a few words.
    pub why: String,
}

/// The judgements of every figure two results share, and what they add up to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    pub judgements: Vec<Judgement>,
    /// The figures judged with repeats: the Bonferroni divisor of the false-alarm rate.
    pub tests: usize,
    pub false_alarm_rate: f64,
}

impl Outcome {
    pub fn regressions(&self) -> impl Iterator<Item = &Judgement> {
        self.judgements
            .iter()
            .filter(|j| j.verdict == Verdict::Regressed)
    }

    pub fn inconclusive(&self) -> impl Iterator<Item = &Judgement> {
        self.judgements
            .iter()
            .filter(|j| matches!(j.verdict, Verdict::Inconclusive { .. }))
    }
}

/// One figure of one scope, with the values both sides measured.
struct Compared<'a> {
    scope: &'a str,
    gate: Gate,
    b: Vec<f64>,
    c: Vec<f64>,
    /// Measured in pairs: `b[k]` beside `c[k]`.
    paired: bool,
    why_not: Option<String>,
}

impl Compared<'_> {
    fn change(&self) -> Option<LogChange> {
        if self.paired {
            LogChange::paired(&self.b, &self.c)
        } else {
            LogChange::between(&self.b, &self.c)
        }
    }
}

/// Every figure the two results share, scope by scope.
fn shared<'a>(baseline: &'a Figures, candidate: &Figures, rules: &GateRules) -> Vec<Compared<'a>> {
    let mut shared = Vec::new();
    for (scope, base) in baseline {
        let Some(cand) = candidate.get(scope) else {
            continue;
        };
        let paired = base.run_names.len() >= 2 && base.run_names == cand.run_names;
        for gate in gates() {
            let (Some(b), Some(c)) = (base.values.get(gate.key), cand.values.get(gate.key)) else {
                continue;
            };
            let (b, c) = if paired {
                both_measured(b, c)
            } else {
                (comparable(b), comparable(c))
            };
            if !b.is_empty() && !c.is_empty() {
                let why_not = why_not_gated(&gate, base, cand, rules);
                shared.push(Compared {
                    scope,
                    gate,
                    b,
                    c,
                    paired,
                    why_not,
                });
            }
        }
    }
    shared
}

/// Compares every figure of every scope the two results share.
pub fn judge(baseline: &Figures, candidate: &Figures, rules: &GateRules) -> Outcome {
    let shared = shared(baseline, candidate, rules);
    let tests = shared
        .iter()
        .filter(|f| f.why_not.is_none() && f.gate.key != "lost" && f.change().is_some())
        .count();
    let each = rules.false_alarm_rate / tests.max(1) as f64;
    let judgements = shared
        .into_iter()
        .map(|f| {
            let (verdict, why, change, bounds) = match &f.why_not {
                Some(why) => (Verdict::NotGated, why.clone(), relative(&f.b, &f.c), None),
                None => verdict(&f, rules, each),
            };
            // The figures the change is computed from: geometric means where it comes from
            // the logarithms' interval, medians otherwise.
            let typical = if bounds.is_some() {
                geometric_mean
            } else {
                median
            };
            Judgement {
                scope: f.scope.to_string(),
                figure: f.gate.key,
                runs: (f.b.len(), f.c.len()),
                paired: f.paired,
                baseline: typical(&f.b),
                candidate: typical(&f.c),
                change,
                bounds,
                verdict,
                why,
            }
        })
        .collect();
    Outcome {
        judgements,
        tests,
        false_alarm_rate: rules.false_alarm_rate,
    }
}

/// Why a figure is shown but not judged: ungated by default (unless given an allowance), or
/// an end-to-end latency that the idle poll sets on both sides: each side's median is within
/// half of the same poll interval, so most jobs were picked up by a consumer waking from its
/// sleep, and the figure moves with how the sleeps line up with arrivals, not with the queue.
/// When the two sides sleep differently, the poll is part of the change, and it is judged.
fn why_not_gated(
    gate: &Gate,
    base: &ScopeFigures,
    cand: &ScopeFigures,
    rules: &GateRules,
) -> Option<String> {
    if rules.per_figure.contains_key(gate.key) {
        return None;
    }
    if let Some(why) = gate.ungated_because {
        return Some(why.to_string());
    }
    if !gate.key.starts_with("e2e_") || base.idle_poll_ms != cand.idle_poll_ms {
        return None;
    }
    let poll = base.idle_poll_ms? as f64;
    let median_of =
        |side: &ScopeFigures| median(&comparable(side.values.get("e2e_p50_ms")?)).into();
    let (b, c): (Option<f64>, Option<f64>) = (median_of(base), median_of(cand));
    let e2e_p50 = b?.max(c?);
    // NaN (no run measured it) compares false: nothing to explain.
    (e2e_p50 <= poll / 2.0).then(|| {
        format!(
            "set by the idle poll (median {e2e_p50:.1} ms within half of poll_interval {poll:.0} ms on both sides): it moves with how sleeps meet arrivals, not with the queue; --max-regression {}=PCT gates it",
            gate.key
        )
    })
}

/// (verdict, why, change, bounds) of one gated figure.
fn verdict(
    f: &Compared,
    rules: &GateRules,
    each: f64,
) -> (Verdict, String, f64, Option<(f64, f64)>) {
    let (gate, b, c) = (&f.gate, f.b.as_slice(), f.c.as_slice());
    let change = relative(b, c);
    let allowed = rules.allowance(gate.key);
    let (bm, cm) = (median(b), median(c));
    if gate.key == "lost" {
        return if cm > 0.0 {
            (Verdict::Regressed, "jobs were lost".into(), change, None)
        } else {
            (Verdict::NoRegression, "none lost".into(), change, None)
        };
    }
    if (cm - bm).abs() <= gate.noise_floor && gate.noise_floor > 0.0 {
        let why = format!("within the noise floor ({} ms)", gate.noise_floor);
        return (Verdict::NoRegression, why, change, None);
    }
    match f.change() {
        Some(ch) => with_spread(gate, &ch, allowed, rules.false_alarm_rate, each),
        None => without_spread(gate, change, allowed),
    }
}

/// The verdict from the change's interval.
fn with_spread(
    gate: &Gate,
    ch: &LogChange,
    allowed: f64,
    alpha: f64,
    each: f64,
) -> (Verdict, String, f64, Option<(f64, f64)>) {
    let way = Worse {
        higher_is_better: gate.higher_is_better,
    };
    let worse = way.orient(ch.estimate);
    let margin = |confidence: f64| ch.upper(confidence) - ch.estimate;
    // On the worse side: the regression test's lower bound, the clearance test's upper bound.
    let worse_low = worse - margin(1.0 - each);
    let worse_high = worse + margin(1.0 - alpha);
    let limit = way.limit(allowed);
    let as_change = |w: f64| way.ratio(w) - 1.0;
    let bounds = Some((as_change(worse_low), as_change(worse_high)));
    let change = ch.estimate.exp() - 1.0;
    let allowed_pct = format!("{:.0}%", allowed * 100.0);
    if worse_low > 0.0 && worse > limit {
        let why = format!(
            "{} (> {allowed_pct}), at least {} at {:.1}% confidence",
            way.describe(worse),
            way.describe(worse_low),
            (1.0 - each) * 100.0
        );
        (Verdict::Regressed, why, change, bounds)
    } else if worse_high < limit {
        let why = format!(
            "{}; at worst {} at {:.0}% confidence (allowed {allowed_pct})",
            way.describe(worse),
            way.describe(worse_high),
            (1.0 - alpha) * 100.0
        );
        (Verdict::NoRegression, why, change, bounds)
    } else {
        // If the change stays what was measured, how many runs would settle it: beyond the
        // allowance, a bound clear of no change; within it, a bound inside the allowance.
        let (needed, settles) = if worse > limit {
            (
                ch.repeats_to_show(worse, 1.0 - each),
                "show it is a regression",
            )
        } else {
            (
                ch.repeats_to_show(limit - worse, 1.0 - alpha),
                "show it within the allowance",
            )
        };
        let unit = if ch.paired { "pairs" } else { "runs a side" };
        let why = format!(
            "{}, allowed {allowed_pct}; runs vary by {:.1}% each: {}",
            way.describe(worse),
            (ch.run_sd.exp() - 1.0) * 100.0,
            match needed {
                Some(n) => format!("about {n} {unit} would {settles}, if the change holds"),
                None => format!("more than {MAX_REPEATS} {unit} would be needed"),
            }
        );
        (
            Verdict::Inconclusive {
                repeats_needed: needed,
            },
            why,
            change,
            bounds,
        )
    }
}

/// A change measured on the worse side's log scale (positive: worse), spoken in the figure's
/// own terms: a throughput 10% worse is 0.9× the baseline, a latency 10% worse is 1.1×.
struct Worse {
    higher_is_better: bool,
}

impl Worse {
    /// Turns ln(candidate / baseline) into the worse-side log change, and back: a sign
    /// flip for figures where higher is better, so it is its own inverse.
    fn orient(&self, estimate: f64) -> f64 {
        if self.higher_is_better {
            -estimate
        } else {
            estimate
        }
    }

    /// candidate / baseline of a worse-side log change.
    fn ratio(&self, worse: f64) -> f64 {
        self.orient(worse).exp()
    }

    /// The share by which the figure got worse (negative: better).
    fn share(&self, worse: f64) -> f64 {
        let r = self.ratio(worse);
        if self.higher_is_better {
            1.0 - r
        } else {
            r - 1.0
        }
    }

    /// The worse-side log change of an allowance (a share); a throughput may not lose 100%.
    fn limit(&self, allowed: f64) -> f64 {
        match self.higher_is_better {
            true if allowed >= 1.0 => f64::INFINITY,
            true => -(1.0 - allowed).ln(),
            false => (1.0 + allowed).ln(),
        }
    }

    fn describe(&self, worse: f64) -> String {
        match self.share(worse) {
            s if s > 0.0 => format!("{:.1}% worse", s * 100.0),
            s if s < 0.0 => format!("{:.1}% better", -s * 100.0),
            _ => "unchanged".into(),
        }
    }
}

/// Single runs (or values the log scale cannot take): no spread to judge noise by, so a
/// change beyond the allowance is inconclusive, never a regression.
fn without_spread(
    gate: &Gate,
    change: f64,
    allowed: f64,
) -> (Verdict, String, f64, Option<(f64, f64)>) {
    let worse_by = if gate.higher_is_better {
        -change
    } else {
        change
    };
    if worse_by <= 0.0 {
        let why = if worse_by < 0.0 {
            "better"
        } else {
            "unchanged"
        };
        (Verdict::NoRegression, why.into(), change, None)
    } else if worse_by <= allowed {
        let why = format!(
            "{:.1}% worse, within {:.0}% (no repeats: noise not measured)",
            worse_by * 100.0,
            allowed * 100.0
        );
        (Verdict::NoRegression, why, change, None)
    } else {
        let why = format!(
            "{:.1}% worse (> {:.0}%), but without repeats there is no spread to tell it from noise: repeat at least 3 runs a side (--repeat 3)",
            worse_by * 100.0,
            allowed * 100.0
        );
        (
            Verdict::Inconclusive {
                repeats_needed: None,
            },
            why,
            change,
            None,
        )
    }
}

/// (candidate − baseline) / baseline of the medians; 0 when equal or the baseline is 0.
fn relative(b: &[f64], c: &[f64]) -> f64 {
    let (bm, cm) = (median(b), median(c));
    if bm == cm || bm == 0.0 {
        0.0
    } else {
        (cm - bm) / bm
    }
}

/// exp(mean(ln v)): the centre the interval on the log scale is about (NaN when empty).
fn geometric_mean(v: &[f64]) -> f64 {
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

/// The values that were measured (NaN: no data). Infinity stays: a consumer search that
/// found no count is worse than any count.
fn comparable(v: &[f64]) -> Vec<f64> {
    v.iter().copied().filter(|x| !x.is_nan()).collect()
}

/// The pairs in which both runs measured the figure.
fn both_measured(b: &[f64], c: &[f64]) -> (Vec<f64>, Vec<f64>) {
    b.iter()
        .zip(c)
        .filter(|(x, y)| !x.is_nan() && !y.is_nan())
        .map(|(x, y)| (*x, *y))
        .unzip()
}

/// The median; NaN of no values (a figure no run measured, e.g. end-to-end latency of a
/// drain of prefilled jobs).
fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests;
