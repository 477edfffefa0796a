//! The statistics of the regression gate: a confidence interval for the change of one figure
//! between two sets of repeated runs.
//!
//! Runs of one setting vary by a share of their value (a slower runner slows everything by a
//! factor), so the change is taken on the log scale: the difference of the mean logarithms,
//! i.e. the ratio of the geometric means. Its interval is Welch's t interval, which stays
//! honest for the 3 to 10 repeats a CI job can afford, where a bootstrap of so few values
//! covers too little.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// The most repeats per side the gate will ask for; beyond it a figure is too noisy to gate.
pub const MAX_REPEATS: u32 = 50;

/// The change of one figure, on the log scale: positive means larger in the candidate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogChange {
    /// mean(ln candidate) − mean(ln baseline).
    pub estimate: f64,
    /// Its standard error (Welch), 0 when neither side varied.
    pub std_error: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub freedom: f64,
    /// The pooled standard deviation of one run's logarithm, for repeats yet to be run.
    pub run_sd: f64,
    /// From pairs of runs measured side by side (see [`LogChange::paired`]).
    pub paired: bool,
}

impl LogChange {
    /// The change between two samples of positive, finite values, each of at least two runs;
    /// `None` otherwise (the log scale needs positive values, the spread two runs a side).
    pub fn between(baseline: &[f64], candidate: &[f64]) -> Option<LogChange> {
        let ok = |v: &[f64]| v.len() >= 2 && v.iter().all(|x| x.is_finite() && *x > 0.0);
        if !ok(baseline) || !ok(candidate) {
            return None;
        }
        let (mb, vb) = mean_var(baseline);
        let (mc, vc) = mean_var(candidate);
        let (nb, nc) = (baseline.len() as f64, candidate.len() as f64);
        let (sb, sc) = (vb / nb, vc / nc);
        let std_error = (sb + sc).sqrt();
        let freedom = if sb + sc > 0.0 {
            (sb + sc).powi(2) / (sb * sb / (nb - 1.0) + sc * sc / (nc - 1.0))
        } else {
            nb + nc - 2.0
        };
        Some(LogChange {
            estimate: mc - mb,
            std_error,
            freedom,
            run_sd: ((vb + vc) / 2.0).sqrt(),
            paired: false,
        })
    }

    /// The change between runs measured in pairs, side by side (baseline k next to candidate
    /// k): the mean of the pairs' log ratios, with the t interval of those n ratios. Drift of
    /// the machine that lasts longer than a pair falls on both of its runs and cancels, where
    /// [`LogChange::between`] counts it as noise. `None` unless n ≥ 2 pairs of positive,
    /// finite values.
    pub fn paired(baseline: &[f64], candidate: &[f64]) -> Option<LogChange> {
        let ok = |x: &f64| x.is_finite() && *x > 0.0;
        let n = baseline.len();
        if n < 2 || candidate.len() != n || !baseline.iter().chain(candidate).all(ok) {
            return None;
        }
        let ratios: Vec<f64> = baseline.iter().zip(candidate).map(|(b, c)| c / b).collect();
        let (mean, var) = mean_var(&ratios);
        Some(LogChange {
            estimate: mean,
            std_error: (var / n as f64).sqrt(),
            freedom: n as f64 - 1.0,
            // A ratio's variance is twice one run's: the unpaired formula then holds.
            run_sd: (var / 2.0).sqrt(),
            paired: true,
        })
    }

    /// The one-sided bound below which the true change lies with `confidence` (0.95 …).
    pub fn upper(&self, confidence: f64) -> f64 {
        self.estimate + t_quantile(confidence, self.freedom) * self.std_error
    }

    /// The one-sided bound above which the true change lies with `confidence`.
    pub fn lower(&self, confidence: f64) -> f64 {
        self.estimate - t_quantile(confidence, self.freedom) * self.std_error
    }

    /// The fewest repeats per side (pairs, when paired) with which this much run-to-run
    /// noise puts the one-sided bound at `confidence` within `gap` of the estimate: if the
    /// change stays what was measured, that many runs settle it. `None`: more than
    /// [`MAX_REPEATS`], or no gap (a change exactly at the allowance is never settled).
    pub fn repeats_to_show(&self, gap: f64, confidence: f64) -> Option<u32> {
        if gap <= 0.0 {
            return None;
        }
        (2..=MAX_REPEATS).find(|&n| {
            let df = if self.paired {
                f64::from(n) - 1.0
            } else {
                2.0 * f64::from(n) - 2.0
            };
            let se = self.run_sd * (2.0 / f64::from(n)).sqrt();
            t_quantile(confidence, df) * se < gap
        })
    }
}

/// The sample mean and variance (n − 1).
fn mean_var(v: &[f64]) -> (f64, f64) {
    let logs: Vec<f64> = v.iter().map(|x| x.ln()).collect();
    let n = logs.len() as f64;
    let mean = logs.iter().sum::<f64>() / n;
    let var = logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var)
}

/// The `p` quantile of Student's t with `freedom` degrees of freedom.
pub fn t_quantile(p: f64, freedom: f64) -> f64 {
    match StudentsT::new(0.0, 1.0, freedom.max(1.0)) {
        Ok(t) => t.inverse_cdf(p),
        // Unreachable for freedom ≥ 1; the normal quantile's worst case keeps it safe.
        Err(_) => f64::INFINITY,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{SeedableRng, rngs::StdRng};
    use rand_distr::{Distribution, LogNormal};

    #[test]
    fn the_t_quantiles_match_the_tables() {
        assert!((t_quantile(0.975, 4.0) - 2.776).abs() < 1e-3);
        assert!((t_quantile(0.95, 8.0) - 1.860).abs() < 1e-3);
        assert!((t_quantile(0.99, 1e6) - 2.326).abs() < 1e-3);
    }

    #[test]
    fn the_change_is_the_ratio_of_geometric_means_with_welchs_freedom() {
        let c = LogChange::between(&[100.0, 100.0, 100.0], &[110.0, 110.0, 110.0]).unwrap();
        assert!((c.estimate - 1.1f64.ln()).abs() < 1e-12);
        assert_eq!(c.std_error, 0.0);
        assert_eq!(c.freedom, 4.0);
        assert!(LogChange::between(&[100.0], &[110.0, 120.0]).is_none());
        assert!(LogChange::between(&[0.0, 1.0], &[1.0, 2.0]).is_none());
        // Equal variances and sizes: Welch's freedom is the pooled n1 + n2 − 2.
        let c = LogChange::between(&[1.0, 2.0, 4.0], &[2.0, 4.0, 8.0]).unwrap();
        assert!((c.freedom - 4.0).abs() < 1e-9);
        assert!((c.estimate - 2f64.ln()).abs() < 1e-12);
    }

    /// Draws `n` runs of a figure whose run-to-run noise is `cv` (log-normal), scaled by `by`.
    fn runs(rng: &mut StdRng, n: usize, cv: f64, by: f64) -> Vec<f64> {
        let d = LogNormal::new(0.0, cv).unwrap();
        (0..n).map(|_| 1000.0 * by * d.sample(rng)).collect()
    }

    #[test]
    fn identical_distributions_exceed_the_bound_at_the_stated_rate() {
        // One-sided 99%: about 1% of A/A pairs have a lower bound above 0.
        let mut rng = StdRng::seed_from_u64(7);
        let trials = 4000;
        let alarms = (0..trials)
            .filter(|_| {
                let b = runs(&mut rng, 5, 0.05, 1.0);
                let c = runs(&mut rng, 5, 0.05, 1.0);
                LogChange::between(&b, &c).unwrap().lower(0.99) > 0.0
            })
            .count();
        let rate = alarms as f64 / f64::from(trials);
        assert!(rate < 0.02, "A/A rate {rate}");
    }

    #[test]
    fn pairs_cancel_drift_that_unpaired_runs_count_as_noise() {
        // Each pair ran in its own minute of a drifting machine (±20%); the candidate is 12%
        // slower in every pair, give or take 1%.
        let drift = [1.0, 0.8, 1.2, 0.9, 1.1];
        let wobble = [1.0, 1.01, 0.99, 1.0, 1.005];
        let b: Vec<f64> = drift.iter().map(|d| 1000.0 * d).collect();
        let c: Vec<f64> = drift
            .iter()
            .zip(wobble)
            .map(|(d, w)| 880.0 * d * w)
            .collect();
        let paired = LogChange::paired(&b, &c).unwrap();
        assert!((paired.estimate - 0.88f64.ln()).abs() < 0.01);
        assert_eq!(paired.freedom, 4.0);
        assert!(paired.upper(0.99) < 0.0, "{paired:?}");
        let unpaired = LogChange::between(&b, &c).unwrap();
        assert!(unpaired.upper(0.99) > 0.0, "{unpaired:?}");
        assert!(LogChange::paired(&b, &c[..4]).is_none());
        assert!(LogChange::paired(&[1.0], &[2.0]).is_none());
    }

    #[test]
    fn a_shift_of_twenty_five_percent_is_caught_and_the_repeats_estimate_holds() {
        let mut rng = StdRng::seed_from_u64(11);
        let caught = (0..1000)
            .filter(|_| {
                let b = runs(&mut rng, 5, 0.05, 1.0);
                let c = runs(&mut rng, 5, 0.05, 1.25);
                LogChange::between(&b, &c).unwrap().lower(0.99) > 0.0
            })
            .count();
        assert!(caught > 950, "caught {caught} of 1000");
        // Noise of 5% a run shows a change 5% inside the allowance at 95% in about 6 runs a
        // side; 40% never; a change at the allowance is never settled.
        let quiet = LogChange::between(&[95.0, 100.0, 105.0], &[95.0, 100.0, 105.0]).unwrap();
        let n = quiet.repeats_to_show(0.05, 0.95).unwrap();
        assert!((4..=8).contains(&n), "{n}");
        assert!(quiet.repeats_to_show(0.02, 0.95).unwrap() > n);
        assert_eq!(quiet.repeats_to_show(0.0, 0.95), None);
        let loud = LogChange::between(&[60.0, 100.0, 160.0], &[60.0, 100.0, 160.0]).unwrap();
        assert_eq!(loud.repeats_to_show(0.05, 0.95), None);
    }
}
