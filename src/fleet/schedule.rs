//! Open-loop arrival schedules: when the fleet *intends* to enqueue its next job.
//!
//! At rate R, jobs are due at `start + k/R` (constant) or as a Poisson process of rate R.
//! The schedule never waits for the database: if inserts are slow the next intended times
//! stay where they are, and the delay shows as schedule lag and latency.

use crate::scenario::Arrival;
use rand::Rng;
use rand::distr::Distribution;
use rand_distr::Exp;

#[derive(Debug, Clone)]
pub struct ArrivalSchedule {
    next_us: f64,
    end_us: u64,
    gap_us: f64,
    poisson: Option<Exp<f64>>,
}

impl ArrivalSchedule {
    /// The schedule of the window `[start_us, end_us)` at `rate` jobs/s (> 0).
    pub fn new(
        (start_us, end_us): (u64, u64),
        rate: f64,
        arrival: Arrival,
        rng: &mut impl Rng,
    ) -> Self {
        match arrival {
            Arrival::Constant => ArrivalSchedule {
                next_us: start_us as f64,
                end_us,
                gap_us: 1e6 / rate,
                poisson: None,
            },
            Arrival::Poisson => {
                let exp = Exp::new(rate / 1e6).ok();
                let first = exp.map_or(0.0, |e| e.sample(rng));
                ArrivalSchedule {
                    next_us: start_us as f64 + first,
                    end_us,
                    gap_us: 0.0,
                    poisson: exp,
                }
            }
        }
    }

    /// The next intended enqueue time (µs on the run clock), or `None` past the window.
    pub fn next(&mut self, rng: &mut impl Rng) -> Option<u64> {
        let t = self.next_us;
        if !t.is_finite() || t >= self.end_us as f64 {
            return None;
        }
        self.next_us += match &self.poisson {
            Some(exp) => exp.sample(rng),
            None => self.gap_us,
        };
        Some(t as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn all(arrival: Arrival, rate: f64, secs: u64) -> Vec<u64> {
        let mut rng = StdRng::seed_from_u64(1);
        let window = (1_000_000, 1_000_000 + secs * 1_000_000);
        let mut s = ArrivalSchedule::new(window, rate, arrival, &mut rng);
        let mut times = Vec::new();
        while let Some(t) = s.next(&mut rng) {
            times.push(t);
        }
        times
    }

    #[test]
    fn constant_arrivals_are_evenly_spaced() {
        let t = all(Arrival::Constant, 300.0, 10);
        assert_eq!(t.len(), 3000);
        assert_eq!(t[0], 1_000_000);
        let gaps: Vec<u64> = t.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(
            gaps.iter().all(|g| (3332..=3334).contains(g)),
            "{:?}",
            &gaps[..8]
        );
    }

    #[test]
    fn poisson_arrivals_have_the_offered_mean_rate() {
        let t = all(Arrival::Poisson, 1000.0, 20);
        // 20,000 expected; the standard deviation is about 141.
        assert!((19_300..=20_700).contains(&t.len()), "{}", t.len());
        assert!(t.iter().all(|x| (1_000_000..21_000_000).contains(x)));
    }
}
