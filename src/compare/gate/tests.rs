//! Unit tests of `gate`.

use super::*;
use crate::compare::markdown::markdown;
use rand::{SeedableRng, rngs::StdRng};
use rand_distr::{Distribution, LogNormal};

fn figures(scope: &str, pairs: &[(&'static str, &[f64])]) -> Figures {
    let values = pairs.iter().map(|(k, v)| (*k, v.to_vec())).collect();
    Figures::from([(
        scope.to_string(),
        ScopeFigures {
            values,
            idle_poll_ms: None,
            ..ScopeFigures::default()
        },
    )])
}

fn only(outcome: &Outcome) -> &Judgement {
    assert_eq!(outcome.judgements.len(), 1, "{outcome:?}");
    &outcome.judgements[0]
}

#[test]
fn a_drop_beyond_the_allowance_and_the_noise_regresses() {
    let rules = GateRules::default();
    let base = figures("run", &[("throughput_per_s", &[1000.0, 1050.0, 980.0])]);
    let slower = figures("run", &[("throughput_per_s", &[700.0, 720.0, 690.0])]);
    assert_eq!(
        only(&judge(&base, &slower, &rules)).verdict,
        Verdict::Regressed
    );
    // As noisy as the change: inconclusive, with the repeats that would decide.
    let noisy = figures("run", &[("throughput_per_s", &[700.0, 990.0, 850.0])]);
    let j = only(&judge(&base, &noisy, &rules)).clone();
    assert!(matches!(j.verdict, Verdict::Inconclusive { .. }), "{j:?}");
    assert!(j.why.contains("runs a side"), "{}", j.why);
    // Quiet and unchanged: shown to be within the allowance.
    let same = figures("run", &[("throughput_per_s", &[1010.0, 1020.0, 1000.0])]);
    assert_eq!(
        only(&judge(&base, &same, &rules)).verdict,
        Verdict::NoRegression
    );
}

/// The figures shown are the ones the change is computed from: with one fast baseline run,
/// the medians rise (6,844 → 7,046, as measured) while the geometric means fall, and a
/// table of medians beside "1.8% worse" contradicted itself.
#[test]
fn the_figures_shown_are_the_ones_the_change_compares() {
    let base = figures("run", &[("throughput_per_s", &[6743.98, 6843.98, 7869.0])]);
    let cand = figures("run", &[("throughput_per_s", &[6826.0, 7045.52, 7144.0])]);
    let j = only(&judge(&base, &cand, &GateRules::default())).clone();
    assert!(j.bounds.is_some(), "{j:?}");
    assert!(j.change < 0.0, "{j:?}");
    let shown = j.candidate / j.baseline - 1.0;
    assert!((shown - j.change).abs() < 1e-9, "{shown} against {j:?}");
    // Without an interval (one run a side) the figures are the runs themselves.
    let one = |v: f64| figures("run", &[("throughput_per_s", &[v])]);
    let j = only(&judge(&one(1000.0), &one(900.0), &GateRules::default())).clone();
    assert_eq!((j.baseline, j.candidate), (1000.0, 900.0));
}

#[test]
fn an_allowance_is_a_share_of_the_figure_in_its_own_direction() {
    let rules = GateRules::default();
    let quiet = |v: f64| [v * 0.999, v, v * 1.001];
    let judged = |key: &'static str, b: f64, c: f64| {
        let base = figures("run", &[(key, &quiet(b))]);
        only(&judge(&base, &figures("run", &[(key, &quiet(c))]), &rules)).clone()
    };
    // Throughput 10% worse is 0.9x the baseline; latency 10% worse is 1.1x.
    let j = judged("throughput_per_s", 1000.0, 905.0);
    assert_eq!(j.verdict, Verdict::NoRegression, "{j:?}");
    assert!(j.why.starts_with("9.5% worse"), "{}", j.why);
    let j = judged("throughput_per_s", 1000.0, 895.0);
    assert_eq!(j.verdict, Verdict::Regressed, "{j:?}");
    assert!(j.why.starts_with("10.5% worse (> 10%)"), "{}", j.why);
    assert_eq!(
        judged("e2e_p99_ms", 100.0, 109.0).verdict,
        Verdict::NoRegression
    );
    assert_eq!(
        judged("e2e_p99_ms", 100.0, 111.0).verdict,
        Verdict::Regressed
    );
    let j = judged("e2e_p99_ms", 100.0, 80.0);
    assert!(j.why.starts_with("20.0% better"), "{}", j.why);
}

#[test]
fn single_runs_are_never_a_regression_and_lost_jobs_always_are() {
    let rules = GateRules::default();
    let base = figures("run", &[("e2e_p99_ms", &[10.0])]);
    let j = only(&judge(
        &base,
        &figures("run", &[("e2e_p99_ms", &[13.0])]),
        &rules,
    ))
    .clone();
    assert_eq!(
        j.verdict,
        Verdict::Inconclusive {
            repeats_needed: None
        }
    );
    assert!(j.why.contains("--repeat 3"), "{}", j.why);
    let within = figures("run", &[("e2e_p99_ms", &[10.5])]);
    assert_eq!(
        only(&judge(&base, &within, &rules)).verdict,
        Verdict::NoRegression
    );
    let lost = judge(
        &figures("run", &[("lost", &[0.0])]),
        &figures("run", &[("lost", &[1.0])]),
        &rules,
    );
    assert_eq!(only(&lost).verdict, Verdict::Regressed);
}

#[test]
fn floors_and_ungated_figures_are_shown_not_judged() {
    let rules = GateRules::default();
    // +28% of a quarter millisecond is below the latency floor.
    let base = figures("run", &[("claim_p50_ms", &[0.25, 0.25, 0.26])]);
    let cand = figures("run", &[("claim_p50_ms", &[0.32, 0.32, 0.33])]);
    let j = only(&judge(&base, &cand, &rules)).clone();
    assert_eq!(j.verdict, Verdict::NoRegression);
    assert!(j.why.contains("noise floor"));
    let base = figures("run", &[("dead_tuples_max", &[100.0, 110.0, 90.0])]);
    let cand = figures("run", &[("dead_tuples_max", &[900.0, 910.0, 990.0])]);
    assert_eq!(
        only(&judge(&base, &cand, &rules)).verdict,
        Verdict::NotGated
    );
    // An allowance of its own gates it.
    let opted = GateRules::parse(&["dead_tuples_max=50%".into()], None, false).unwrap();
    assert_eq!(
        only(&judge(&base, &cand, &opted)).verdict,
        Verdict::Regressed
    );
    // End-to-end latency that is mostly a 1 s idle poll is not gated.
    let mut poll = figures("run", &[("e2e_p50_ms", &[400.0, 600.0, 500.0])]);
    poll.get_mut("run").unwrap().idle_poll_ms = Some(1000);
    let j = only(&judge(&poll, &poll.clone(), &rules)).clone();
    assert_eq!(j.verdict, Verdict::NotGated);
    assert!(j.why.contains("idle poll"), "{}", j.why);
}

#[test]
fn a_candidate_that_sleeps_longer_is_judged_on_its_latency() {
    // Half the workers and twice the idle poll: the latency doubled, and the poll was
    // the change, so it is not excused by the baseline's poll.
    let rules = GateRules::default();
    let side = |poll: u64, p50: &[f64]| {
        let mut f = figures("run", &[("e2e_p50_ms", p50)]);
        f.get_mut("run").unwrap().idle_poll_ms = Some(poll);
        f
    };
    let base = side(100, &[44.0, 46.0, 45.0, 45.5, 44.5]);
    let cand = side(200, &[103.0, 105.0, 104.0, 102.0, 106.0]);
    let j = only(&judge(&base, &cand, &rules)).clone();
    assert_eq!(j.verdict, Verdict::Regressed, "{}", j.why);
    // The same poll on both sides, both medians within half of it: not judged.
    let slow = side(1000, &[480.0, 520.0, 500.0]);
    let j = only(&judge(&side(1000, &[300.0, 310.0, 305.0]), &slow, &rules)).clone();
    assert_eq!(j.verdict, Verdict::NotGated, "{}", j.why);
    // The candidate's median past half the poll: judged, though the baseline's was not.
    let j = only(&judge(
        &side(100, &[30.0, 31.0, 32.0]),
        &side(100, &[80.0, 82.0, 81.0]),
        &rules,
    ))
    .clone();
    assert_eq!(j.verdict, Verdict::Regressed, "{}", j.why);
}

#[test]
fn runs_of_the_same_name_are_compared_as_pairs() {
    // The machine drifted by ±20% from pair to pair; the candidate is 12% slower in each.
    let named = |values: &[f64]| {
        let mut f = figures("run", &[("throughput_per_s", values)]);
        let scope = f.get_mut("run").unwrap();
        scope.run_names = (1..=values.len()).map(|k| format!("r{k}")).collect();
        f
    };
    let base = named(&[1000.0, 800.0, 1200.0, 900.0, 1100.0]);
    let cand = named(&[880.0, 711.0, 1046.0, 792.0, 973.0]);
    let j = only(&judge(&base, &cand, &GateRules::default())).clone();
    assert!(j.paired);
    assert_eq!(j.verdict, Verdict::Regressed, "{j:?}");
    assert!(
        markdown(&judge(&base, &cand, &GateRules::default()), "a", "b", &[])
            .contains("| 5 pairs |")
    );
    // The same values without names: the drift is noise, and nothing can be concluded.
    let unnamed = |f: &Figures| {
        let mut f = f.clone();
        f.get_mut("run").unwrap().run_names.clear();
        f
    };
    let j = only(&judge(
        &unnamed(&base),
        &unnamed(&cand),
        &GateRules::default(),
    ))
    .clone();
    assert!(matches!(j.verdict, Verdict::Inconclusive { .. }), "{j:?}");
}

#[test]
fn figures_no_run_measured_are_left_out() {
    // A drain of prefilled jobs has no end-to-end latency: every repeat is NaN.
    let nan = [f64::NAN, f64::NAN];
    let mut drained = figures(
        "run",
        &[("e2e_p50_ms", &nan), ("throughput_per_s", &[990.0, 1010.0])],
    );
    drained.get_mut("run").unwrap().idle_poll_ms = Some(50);
    let outcome = judge(&drained, &drained.clone(), &GateRules::default());
    assert_eq!(only(&outcome).figure, "throughput_per_s");
    assert!(median(&[]).is_nan());
}

#[test]
fn rules_parse_and_refuse_in_one_line() {
    let r = GateRules::parse(&["5%".into(), "e2e_p99_ms=50%".into()], Some("1%"), true).unwrap();
    assert_eq!(r.allowance("throughput_per_s"), 0.05);
    assert_eq!(r.allowance("e2e_p99_ms"), 0.5);
    assert_eq!(r.false_alarm_rate, 0.01);
    assert!(GateRules::parse(&["fast".into()], None, false).is_err());
    let e = GateRules::parse(&["p99=10%".into()], None, false).unwrap_err();
    assert!(e.contains("unknown figure p99"), "{e}");
    let e = GateRules::parse(&[], Some("70%"), false).unwrap_err();
    assert!(e.contains("--false-alarm-rate 70%"), "{e}");
}

/// Five gated figures of `n` runs a side, each with its own run-to-run noise, the
/// candidate's scaled by `by` (throughput divided, latency multiplied).
fn five_figures(rng: &mut StdRng, n: usize, by: f64) -> Figures {
    let keys = [
        ("throughput_per_s", 0.04, 1.0 / by),
        ("completed_per_s", 0.04, 1.0 / by),
        ("e2e_p50_ms", 0.06, by),
        ("e2e_p99_ms", 0.15, by),
        ("claim_p50_ms", 0.05, 1.0),
    ];
    let values = keys
        .iter()
        .map(|(k, cv, scale)| {
            let d = LogNormal::new(0.0, *cv).unwrap();
            (*k, (0..n).map(|_| 50.0 * scale * d.sample(rng)).collect())
        })
        .collect();
    Figures::from([(
        "run".to_string(),
        ScopeFigures {
            values,
            idle_poll_ms: None,
            ..ScopeFigures::default()
        },
    )])
}

/// Of `trials` simulated A/B comparisons (5 runs a side, the candidate scaled by `by`),
/// how many the gate calls a regression.
fn alarms(seed: u64, trials: usize, by: f64) -> usize {
    let mut rng = StdRng::seed_from_u64(seed);
    let rules = GateRules::default();
    (0..trials)
        .filter(|_| {
            let b = five_figures(&mut rng, 5, 1.0);
            let c = five_figures(&mut rng, 5, by);
            judge(&b, &c, &rules).regressions().count() > 0
        })
        .count()
}

#[test]
fn identical_settings_raise_a_false_alarm_at_most_at_the_stated_rate() {
    let rate = alarms(3, 2000, 1.0) as f64 / 2000.0;
    assert!(rate <= 0.05, "family-wise false alarms {rate}");
}

#[test]
fn a_quarter_slower_is_caught() {
    let caught = alarms(5, 500, 1.25);
    assert!(caught >= 475, "caught {caught} of 500");
}
