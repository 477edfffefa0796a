//! The simulated job handler: sleeps for a duration drawn from the scenario's distribution
//! (or, for the fraction of runs `handler.slow` makes slow, its fixed duration) and fails with
//! the configured probability. A draw takes no random numbers for an option that is off, so
//! a seed draws the same runs as before the option existed. Sleeps use a high-resolution
//! timer of the worker's own (`sleep`), not tokio's 1 ms one; the `handler` histogram records
//! the time actually spent.

use crate::scenario::{DurationDist, HandlerPlan};
use rand::distr::Distribution;
use rand::{Rng, RngExt};
use rand_distr::{Exp, LogNormal};
use std::time::Duration;

/// What one run of the handler will do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HandlerRun {
    pub duration: Duration,
    pub fails: bool,
}

pub struct SimulatedHandler {
    plan: HandlerPlan,
    sleep: super::sleep::PreciseSleep,
}

impl SimulatedHandler {
    pub fn new(plan: HandlerPlan) -> Self {
        SimulatedHandler {
            plan,
            sleep: Default::default(),
        }
    }

    /// Draws the next run's duration and outcome.
    pub fn draw(&self, rng: &mut impl Rng) -> HandlerRun {
        let secs = match self.plan.duration {
            DurationDist::Fixed(d) => d.0.as_secs_f64(),
            DurationDist::Uniform { min, max } => {
                let (a, b) = (min.0.as_secs_f64(), max.0.as_secs_f64());
                if a == b { a } else { rng.random_range(a..=b) }
            }
            DurationDist::Exponential { mean } => {
                Exp::new(1.0 / mean.0.as_secs_f64()).map_or(0.0, |e| e.sample(rng))
            }
            DurationDist::Lognormal { median, sigma } => {
                LogNormal::new(median.0.as_secs_f64().ln(), sigma).map_or(0.0, |d| d.sample(rng))
            }
        };
        let slow = self.plan.slow.filter(|s| rng.random_bool(s.fraction));
        HandlerRun {
            duration: slow.map_or(Duration::from_secs_f64(secs.clamp(0.0, 3600.0)), |s| {
                s.duration
            }),
            fails: self.plan.error_rate > 0.0 && rng.random_bool(self.plan.error_rate),
        }
    }

    /// Spends `d`: asleep, or (`cpu_bound`) busy on this thread, as a CPU-bound job would.
    pub async fn spend(&mut self, d: Duration) {
        if d.is_zero() {
            return;
        }
        if !self.plan.cpu_bound {
            return self.sleep.sleep(d).await;
        }
        let end = std::time::Instant::now() + d;
        while std::time::Instant::now() < end {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::HumanDuration;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn mean_ms(dist: DurationDist) -> f64 {
        let h = SimulatedHandler::new(HandlerPlan {
            duration: dist,
            error_rate: 0.0,
            cpu_bound: false,
            slow: None,
        });
        let mut rng = StdRng::seed_from_u64(9);
        (0..20_000)
            .map(|_| h.draw(&mut rng).duration.as_secs_f64() * 1e3)
            .sum::<f64>()
            / 20_000.0
    }

    #[test]
    fn distributions_have_their_documented_centres() {
        assert_eq!(
            mean_ms(DurationDist::Fixed(HumanDuration::from_millis(5))),
            5.0
        );
        let u = mean_ms(DurationDist::Uniform {
            min: HumanDuration::from_millis(2),
            max: HumanDuration::from_millis(8),
        });
        assert!((4.9..5.1).contains(&u), "{u}");
        let e = mean_ms(DurationDist::Exponential {
            mean: HumanDuration::from_millis(5),
        });
        assert!((4.8..5.2).contains(&e), "{e}");
        // Lognormal mean = median * exp(sigma^2 / 2) = 5 * 1.1331 for sigma 0.5.
        let l = mean_ms(DurationDist::Lognormal {
            median: HumanDuration::from_millis(5),
            sigma: 0.5,
        });
        assert!((5.45..5.9).contains(&l), "{l}");
    }

    #[test]
    fn error_rate_is_a_probability() {
        let h = SimulatedHandler::new(HandlerPlan {
            duration: DurationDist::default(),
            error_rate: 0.25,
            cpu_bound: false,
            slow: None,
        });
        let mut rng = StdRng::seed_from_u64(1);
        let fails = (0..10_000).filter(|_| h.draw(&mut rng).fails).count();
        assert!((2300..2700).contains(&fails), "{fails}");
    }

    #[test]
    fn slow_runs_take_their_duration_in_their_fraction() {
        let plan = |slow| HandlerPlan {
            duration: DurationDist::Fixed(HumanDuration::from_millis(1)),
            error_rate: 0.25,
            cpu_bound: false,
            slow,
        };
        let slow = crate::scenario::SlowRuns {
            fraction: 0.1,
            duration: Duration::from_secs(2),
        };
        let runs = |h: SimulatedHandler| {
            let mut rng = StdRng::seed_from_u64(3);
            (0..10_000).map(|_| h.draw(&mut rng)).collect::<Vec<_>>()
        };
        let with = runs(SimulatedHandler::new(plan(Some(slow))));
        let long = with.iter().filter(|r| r.duration == slow.duration).count();
        let short = with.iter().filter(|r| r.duration.as_millis() == 1).count();
        assert!((900..1100).contains(&long), "{long}");
        assert_eq!(long + short, with.len());
        // Off, it draws what it drew before the option existed: no random number taken.
        let without = runs(SimulatedHandler::new(plan(None)));
        let mut rng = StdRng::seed_from_u64(3);
        let fails: Vec<bool> = (0..10_000).map(|_| rng.random_bool(0.25)).collect();
        assert_eq!(without.iter().map(|r| r.fails).collect::<Vec<_>>(), fails);
    }
}
