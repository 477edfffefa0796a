//! What producers enqueue: job type and priority drawn from the scenario's weighted mixes,
//! and a JSON payload carrying the job's unique key and intended enqueue time, padded to the
//! configured size.

use crate::queue::NewJob;
use crate::scenario::ProducerPlan;
use rand::Rng;
use rand::distr::Distribution;
use rand::distr::weighted::WeightedIndex;

#[derive(Debug, Clone)]
pub struct JobFactory {
    types: Vec<String>,
    type_weights: WeightedIndex<u32>,
    priorities: Vec<i32>,
    priority_weights: WeightedIndex<u32>,
    payload_bytes: usize,
}

impl JobFactory {
    /// The plan has validated that each mix has a positive total weight.
    pub fn new(plan: &ProducerPlan) -> JobFactory {
        let type_weights = WeightedIndex::new(plan.job_types.iter().map(|(_, w)| *w))
            .expect("validated job type weights");
        let priority_weights = WeightedIndex::new(plan.priorities.iter().map(|(_, w)| *w))
            .expect("validated priority weights");
        JobFactory {
            types: plan.job_types.iter().map(|(t, _)| t.clone()).collect(),
            type_weights,
            priorities: plan.priorities.iter().map(|(p, _)| *p).collect(),
            priority_weights,
            payload_bytes: plan.payload_bytes,
        }
    }

    /// A job with unique `key` scheduled for `intended_us` on the run clock.
    pub fn make(&self, rng: &mut impl Rng, key: &str, intended_us: u64) -> NewJob {
        NewJob {
            job_type: self.types[self.type_weights.sample(rng)].clone(),
            payload: payload(key, intended_us, self.payload_bytes),
            priority: self.priorities[self.priority_weights.sample(rng)],
        }
    }
}

/// `{"k":"<key>","t":<µs>,"pad":"xxx…"}`, padded so the JSON text is `bytes` long when
/// that is more than the unpadded form.
fn payload(key: &str, intended_us: u64, bytes: usize) -> String {
    let base = format!("{{\"k\":\"{key}\",\"t\":{intended_us}");
    const PAD_FIELD: usize = ",\"pad\":\"\"}".len();
    match bytes.checked_sub(base.len() + PAD_FIELD) {
        Some(n) if n > 0 => format!("{base},\"pad\":\"{}\"}}", "x".repeat(n)),
        _ => format!("{base}}}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn payloads_have_the_requested_size_and_parse() {
        let p = payload("r1-p0-42", 123_456, 256);
        assert_eq!(p.len(), 256);
        let v: serde_json::Value = serde_json::from_str(&p).unwrap();
        assert_eq!(v["t"], 123_456);
        assert_eq!(v["k"], "r1-p0-42");
        let small = payload("k", 1, 4);
        assert_eq!(small, "{\"k\":\"k\",\"t\":1}");
    }

    #[test]
    fn mixes_follow_their_weights() {
        let plan = ProducerPlan {
            count: 1,
            arrival: crate::scenario::Arrival::Constant,
            prefill: 0,
            payload_bytes: 64,
            job_types: vec![("email".into(), 3), ("report".into(), 1)],
            priorities: vec![(0, 1), (10, 0)],
            late_after: std::time::Duration::from_millis(5),
        };
        let f = JobFactory::new(&plan);
        let mut rng = StdRng::seed_from_u64(3);
        let jobs: Vec<NewJob> = (0..4000)
            .map(|i| f.make(&mut rng, &i.to_string(), 0))
            .collect();
        let emails = jobs.iter().filter(|j| j.job_type == "email").count();
        assert!((2850..=3150).contains(&emails), "{emails}");
        assert!(jobs.iter().all(|j| j.priority == 0));
    }
}
