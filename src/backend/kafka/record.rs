//! A job as a Kafka record: its key is the job id, its value the payload, and its headers
//! say what the harness needs without parsing the payload (id, type, failed attempts, and
//! for a retry when it may run). Written by the workers and producers, read by the proof.
//! A record without them, or whose payload is not a job's, is foreign: anyone with access
//! may write into the run's topics, and such a record is set aside, never run.

use crate::backend::error::{BackendError, ErrorClass};
use crate::backend::job::{JobId, JobPayload};
use rdkafka::message::{Header, Headers, Message, OwnedHeaders, OwnedMessage};

/// A record's headers: the job id, type, failed attempts, and (retries) when it may run.
pub struct Described {
    pub id: JobId,
    pub job_type: String,
    pub retries: i32,
    pub due_ms: i64,
}

/// The job `m` carries: its headers and payload, or why the harness cannot have written it.
pub fn read_job(m: &OwnedMessage) -> Result<(Described, JobPayload), String> {
    let d = describe(m)
        .map_err(|_| "it has no job id header: the harness writes one on every record")?;
    match serde_json::from_slice::<JobPayload>(m.payload().unwrap_or(b"")) {
        Ok(payload) => Ok((d, payload)),
        Err(e) => Err(format!(
            "it names job {} but its payload is not a job's ({e})",
            d.id
        )),
    }
}

/// Why `m` cannot be a record the harness wrote (`None`: it can).
pub fn foreign(m: &OwnedMessage) -> Option<String> {
    read_job(m).err()
}

/// Where a record lies, in the proof's words.
pub fn place(topic: &str, partition: i32, offset: i64) -> String {
    format!("{topic} partition {partition} offset {offset}")
}

/// Reads the headers the harness writes on every record.
pub fn describe(m: &OwnedMessage) -> Result<Described, BackendError> {
    let mut d = Described {
        id: 0,
        job_type: String::new(),
        retries: 0,
        due_ms: 0,
    };
    for h in m.headers().iter().flat_map(|h| h.iter()) {
        let value = h.value.map(String::from_utf8_lossy).unwrap_or_default();
        match h.key {
            "id" => d.id = value.parse().unwrap_or(0),
            "type" => d.job_type = value.into_owned(),
            "retries" => d.retries = value.parse().unwrap_or(0),
            "due" => d.due_ms = value.parse().unwrap_or(0),
            _ => {}
        }
    }
    if d.id == 0 {
        return Err(BackendError::new(
            ErrorClass::Permanent,
            format!(
                "a record without a job id ({} offset {})",
                m.topic(),
                m.offset()
            ),
        ));
    }
    Ok(d)
}

pub fn headers(id: JobId, job_type: &str, retries: i32, extra: &[(&str, &str)]) -> OwnedHeaders {
    let (id, retries) = (id.to_string(), retries.to_string());
    let mut h = OwnedHeaders::new()
        .insert(Header {
            key: "id",
            value: Some(&id),
        })
        .insert(Header {
            key: "type",
            value: Some(job_type),
        })
        .insert(Header {
            key: "retries",
            value: Some(&retries),
        });
    for (key, value) in extra {
        h = h.insert(Header {
            key,
            value: Some(*value),
        });
    }
    h
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
