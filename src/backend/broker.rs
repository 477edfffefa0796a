//! What the broker backends share: the seed's back-off computed by the client (a broker has
//! no `NOW() + interval`), and the payload's key read without parsing the payload.

use crate::backend::error::{BackendError, ErrorClass};
use crate::backend::queue::{BackoffPlan, QueuePlan, VariantName};

/// Jobs one claim takes on a broker: the variant as the job's life (`seed` one, `batch` up
/// to `queue.claim_batch`); the SQL variants have no meaning on `broker`.
pub fn claim_batch(q: &QueuePlan, broker: &str) -> Result<u32, BackendError> {
    match q.variant.name {
        VariantName::Seed => Ok(1),
        VariantName::Batch => Ok(q.variant.claim_batch),
        other => Err(BackendError::new(
            ErrorClass::Permanent,
            format!(
                "variant {} is SQL; on {broker} use seed or batch",
                other.as_str()
            ),
        )),
    }
}

/// The back-off before the next attempt of a job that has failed `retries` times before,
/// in ms: `min(base × factor^retries, cap)`, then jitter (the seed's failure update).
pub fn backoff_ms(b: &BackoffPlan, retries: i32) -> u64 {
    let delay = b.base.as_secs_f64() * b.factor.powi(retries);
    let delay = b.cap.map_or(delay, |c| delay.min(c.as_secs_f64()));
    let floor = b.jitter.floor();
    let delay = delay * (floor + (1.0 - floor) * rand::random::<f64>());
    (delay.min(86_400.0) * 1000.0).round() as u64
}

/// The payload's unique key (`{"k":"…",…}`): how an in-doubt enqueue is found again.
pub fn payload_key(payload: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(payload).ok()?;
    let rest = &text[text.find("\"k\":\"")? + 5..];
    Some(&rest[..rest.find('"')?])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::queue::Jitter;
    use std::time::Duration;

    #[test]
    fn the_payload_key_is_read_without_parsing() {
        assert_eq!(payload_key(br#"{"k":"r1-p0-7","t":5}"#), Some("r1-p0-7"));
        assert_eq!(payload_key(br#"{"t":5}"#), None);
    }

    #[test]
    fn the_backoff_is_the_seeds() {
        let b = BackoffPlan {
            base: Duration::from_millis(100),
            factor: 2.0,
            cap: Some(Duration::from_millis(300)),
            jitter: Jitter::None,
        };
        assert_eq!(backoff_ms(&b, 0), 100);
        assert_eq!(backoff_ms(&b, 1), 200);
        assert_eq!(backoff_ms(&b, 5), 300);
    }
}
