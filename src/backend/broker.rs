//! What the broker backends share: the seed's back-off computed by the client (a broker has
//! no `NOW() + interval`), the payload's key read without parsing the payload, and the
//! proof's comparison of what a broker holds with what the ledger expects.

use crate::backend::error::{BackendError, ErrorClass};
use crate::backend::job::{JobId, TableMismatch};
use crate::backend::queue::{BackoffPlan, QueuePlan, VariantName};
use std::collections::HashSet;

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

/// The jobs of `ids` that the broker does not show finished as the ledger `expected`
/// (parallel to `ids`), each with the status `status_of(id, expected)` reads for it.
pub fn mismatches(
    ids: &[JobId],
    expected: &[&str],
    mut status_of: impl FnMut(JobId, &str) -> String,
) -> Vec<TableMismatch> {
    let mut out = Vec::new();
    for (id, expected) in ids.iter().zip(expected) {
        let status = status_of(*id, expected);
        if status != *expected || !matches!(status.as_str(), "done" | "dead_letter") {
            out.push(TableMismatch {
                id: *id,
                table_status: status,
                expected: expected.to_string(),
            });
        }
    }
    out
}

/// The jobs a broker holds, (id, status), with ids in `[from, to)` and not among `known`,
/// in id order.
pub fn untracked(
    held: impl Iterator<Item = (JobId, String)>,
    known: &[JobId],
    from: JobId,
    to: JobId,
) -> Vec<(JobId, String)> {
    let known: HashSet<JobId> = known.iter().copied().collect();
    let mut out: Vec<(JobId, String)> = held
        .filter(|(id, _)| (from..to).contains(id) && !known.contains(id))
        .collect();
    out.sort();
    out
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
