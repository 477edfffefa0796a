//! What producers enqueue: job type and priority drawn from the scenario's weighted mixes,
//! and a JSON payload carrying the job's unique key and intended enqueue time, padded to the
//! configured size.

use crate::backend::NewJob;
use crate::scenario::ProducerPlan;
use rand::distr::Distribution;
use rand::distr::weighted::WeightedIndex;
use rand::{Rng, RngExt};

#[derive(Debug, Clone)]
pub struct JobFactory {
    types: Vec<String>,
    type_weights: WeightedIndex<u32>,
    priorities: Vec<i32>,
    priority_weights: WeightedIndex<u32>,
    payload_bytes: usize,
    poison_fraction: f64,
    crash_fraction: f64,
}

/// A job ready to insert, with what the harness made it be.
#[derive(Debug, Clone)]
pub struct MadeJob {
    pub job: NewJob,
    pub key: String,
    /// Its handler always fails.
    pub poison: bool,
    /// Its handler always crashes the worker.
    pub crash: bool,
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
            poison_fraction: plan.poison_fraction,
            crash_fraction: plan.crash_fraction,
        }
    }

    /// A job with unique `key` scheduled for `intended_us` on the run clock, paying `order`
    /// when it is an outbox job.
    pub fn make(
        &self,
        rng: &mut impl Rng,
        key: String,
        intended_us: u64,
        order: Option<i64>,
    ) -> MadeJob {
        let draw: f64 = rng.random();
        let poison = draw < self.poison_fraction;
        let crash = !poison && draw < self.poison_fraction + self.crash_fraction;
        let mut fields = format!("{{\"k\":\"{key}\",\"t\":{intended_us}");
        if poison {
            fields.push_str(",\"poison\":true");
        }
        if crash {
            fields.push_str(",\"crash\":true");
        }
        if let Some(o) = order {
            fields.push_str(&format!(",\"order\":\"{o}\""));
        }
        MadeJob {
            job: NewJob {
                job_type: self.types[self.type_weights.sample(rng)].clone(),
                payload: pad(fields, self.payload_bytes),
                priority: self.priorities[self.priority_weights.sample(rng)],
            },
            key,
            poison,
            crash,
        }
    }
}

/// Closes the JSON object `fields` (`{"k":…` without its `}`), padded with a `"pad"` field so
/// the text is `bytes` long when that is more than the unpadded form.
fn pad(fields: String, bytes: usize) -> String {
    const PAD_FIELD: usize = ",\"pad\":\"\"}".len();
    match bytes.checked_sub(fields.len() + PAD_FIELD) {
        Some(n) if n > 0 => format!("{fields},\"pad\":\"{}\"}}", "x".repeat(n)),
        _ => format!("{fields}}}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn payloads_have_the_requested_size_and_parse() {
        let p = pad("{\"k\":\"r1-p0-42\",\"t\":123456".into(), 256);
        assert_eq!(p.len(), 256);
        let v: serde_json::Value = serde_json::from_str(&p).unwrap();
        assert_eq!(v["t"], 123_456);
        assert_eq!(v["k"], "r1-p0-42");
        let small = pad("{\"k\":\"k\",\"t\":1".into(), 4);
        assert_eq!(small, "{\"k\":\"k\",\"t\":1}");
    }

    #[test]
    fn mixes_follow_their_weights() {
        let plan = ProducerPlan {
            count: 1,
            max_count: 8,
            arrival: crate::scenario::Arrival::Constant,
            prefill: 0,
            payload_bytes: 64,
            job_types: vec![("email".into(), 3), ("report".into(), 1)],
            priorities: vec![(0, 1), (10, 0)],
            late_after: std::time::Duration::from_millis(5),
            poison_fraction: 0.1,
            crash_fraction: 0.05,
            outbox: None,
        };
        let f = JobFactory::new(&plan);
        let mut rng = StdRng::seed_from_u64(3);
        let jobs: Vec<MadeJob> = (0..4000)
            .map(|i| f.make(&mut rng, i.to_string(), 0, Some(i)))
            .collect();
        let emails = jobs.iter().filter(|j| j.job.job_type == "email").count();
        assert!((2850..=3150).contains(&emails), "{emails}");
        assert!(jobs.iter().all(|j| j.job.priority == 0));
        let poison = jobs.iter().filter(|j| j.poison).count();
        let crash = jobs.iter().filter(|j| j.crash).count();
        assert!(
            (330..=470).contains(&poison) && (140..=260).contains(&crash),
            "{poison} {crash}"
        );
        // The flags and the order are in the payload, where workers and the proof read them.
        let v: serde_json::Value =
            serde_json::from_str(&jobs.iter().find(|j| j.poison).unwrap().job.payload).unwrap();
        assert_eq!(v["poison"], true);
        assert!(v["order"].is_string());
    }
}
