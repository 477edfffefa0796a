//! One connection to a Redis queue: what producers, workers, the reaper and the bystander do
//! on it, each step one script.

use super::{GROUP, Shared};
use crate::backend::broker::{backoff_ms, payload_key};
use crate::backend::error::{BackendError, ErrorClass};
use crate::backend::job::{ClaimedJob, FailOutcome, Handout, JobId, JobPayload, NewJob};
use crate::backend::queue::ClaimMode;
use crate::backend::seam::{Bystand, Connection, Enqueue, Work};
use async_trait::async_trait;
use redis::aio::MultiplexedConnection;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Jobs per enqueue script in a prefill: one round trip each, short enough not to hold the
/// server from everyone else for long.
const ENQUEUE_CHUNK: usize = 500;

/// A job this worker holds: its stream entry and its attempts so far.
struct Held {
    entry: String,
    retries: i32,
}

pub struct RedisLink {
    pub(super) conn: MultiplexedConnection,
    pub(super) shared: Arc<Shared>,
    pub(super) role: String,
    held: HashMap<JobId, Held>,
    /// A connection error was seen: the link must be replaced.
    broken: bool,
}

impl RedisLink {
    pub fn new(conn: MultiplexedConnection, shared: Arc<Shared>, role: String) -> RedisLink {
        RedisLink {
            conn,
            shared,
            role,
            held: HashMap::new(),
            broken: false,
        }
    }

    /// The result, its error classified, the link marked broken on a connection error.
    pub(super) fn seen<T>(&mut self, r: redis::RedisResult<T>) -> Result<T, BackendError> {
        r.map_err(|e| {
            let e = BackendError::from(e);
            self.broken |= e.is_connection();
            e
        })
    }

    async fn enqueue_many(&mut self, jobs: &[NewJob]) -> Result<Vec<JobId>, BackendError> {
        let k = &self.shared.keys;
        let mut call = self.shared.scripts.enqueue.prepare_invoke();
        call.key(&k.stream).key(&k.state).key(&k.seq).key(&k.keys);
        call.arg(self.shared.highest_id.load(Ordering::Relaxed));
        for job in jobs {
            call.arg(&job.job_type)
                .arg(&job.payload)
                .arg(payload_key(job.payload.as_bytes()).unwrap_or(""));
        }
        let r = call.invoke_async::<Vec<JobId>>(&mut self.conn).await;
        let ids = self.seen(r)?;
        if let Some(max) = ids.iter().max() {
            self.shared.highest_id.fetch_max(*max, Ordering::Relaxed);
        }
        Ok(ids)
    }
}

#[async_trait]
impl Connection for RedisLink {
    async fn close(self: Box<Self>) {}
}

#[async_trait]
impl Enqueue for RedisLink {
    async fn enqueue(&mut self, job: &NewJob) -> Result<JobId, BackendError> {
        let ids = self.enqueue_many(std::slice::from_ref(job)).await?;
        ids.first().copied().ok_or_else(|| {
            BackendError::new(ErrorClass::Permanent, "the enqueue script returned no id")
        })
    }

    async fn enqueue_batch(&mut self, jobs: &[NewJob]) -> Result<Vec<JobId>, BackendError> {
        let mut ids = Vec::with_capacity(jobs.len());
        for chunk in jobs.chunks(ENQUEUE_CHUNK) {
            ids.extend(self.enqueue_many(chunk).await?);
        }
        Ok(ids)
    }
}

#[async_trait]
impl Work for RedisLink {
    /// Always committed: an entry read by the group is pending until acknowledged.
    async fn claim(&mut self, _mode: ClaimMode) -> Result<Vec<ClaimedJob>, BackendError> {
        let k = &self.shared.keys;
        let r = self
            .shared
            .scripts
            .claim
            .key(&k.stream)
            .key(&k.state)
            .key(&k.delayed)
            .arg(GROUP)
            .arg(&self.role)
            .arg(self.shared.info.claim_batch)
            .invoke_async::<Vec<String>>(&mut self.conn)
            .await;
        let flat = self.seen(r)?;
        let mut jobs = Vec::with_capacity(flat.len() / 5);
        for j in flat.chunks_exact(5) {
            let [entry, id, job_type, retries, payload] = j else {
                unreachable!("chunks of five")
            };
            let id: JobId = id.parse().map_err(|_| bad_reply("job id", id))?;
            let retries = retries.parse().map_err(|_| bad_reply("retries", retries))?;
            let payload: JobPayload = serde_json::from_str(payload)
                .map_err(|e| bad_reply("payload", &format!("{e} in job {id}")))?;
            self.held.insert(
                id,
                Held {
                    entry: entry.clone(),
                    retries,
                },
            );
            jobs.push(ClaimedJob {
                id,
                job_type: job_type.clone(),
                payload,
                handout: Handout::Queued,
            });
        }
        Ok(jobs)
    }

    async fn idle(&mut self, _mode: ClaimMode) -> Result<(), BackendError> {
        Ok(())
    }

    async fn fail(&mut self, id: JobId, error: &str) -> Result<FailOutcome, BackendError> {
        let Some(held) = self.held.remove(&id) else {
            return Err(not_held(id));
        };
        let k = &self.shared.keys;
        let r = self
            .shared
            .scripts
            .fail
            .key(&k.stream)
            .key(&k.state)
            .key(&k.delayed)
            .key(&k.dead)
            .arg(GROUP)
            .arg(&held.entry)
            .arg(id)
            .arg(self.shared.max_retries)
            .arg(backoff_ms(&self.shared.backoff, held.retries))
            .arg(error)
            .invoke_async::<i64>(&mut self.conn)
            .await;
        Ok(match self.seen(r)? {
            1 => FailOutcome::DeadLettered,
            // The reaper had taken it back already.
            -1 => FailOutcome::Stale,
            _ => FailOutcome::Retry,
        })
    }

    async fn finish(
        &mut self,
        _mode: ClaimMode,
        done: &[JobId],
    ) -> Result<Vec<JobId>, BackendError> {
        let k = &self.shared.keys;
        let mut call = self.shared.scripts.complete.prepare_invoke();
        call.key(&k.stream)
            .key(&k.state)
            .key(&k.audit)
            .key(&k.audit_on)
            .arg(GROUP);
        let mut any = false;
        for id in done {
            if let Some(held) = self.held.remove(id) {
                call.arg(held.entry).arg(*id);
                any = true;
            }
        }
        if !any {
            return Ok(Vec::new());
        }
        let r = call.invoke_async::<Vec<JobId>>(&mut self.conn).await;
        self.seen(r)
    }

    /// Nothing to undo: what was claimed stays pending for the reaper.
    async fn recover(&mut self, _mode: ClaimMode) -> bool {
        self.held.clear();
        !self.broken
    }

    async fn reap(
        &mut self,
        stale_after: Duration,
        count_as_attempt: bool,
    ) -> Result<Vec<(JobId, bool)>, BackendError> {
        let mut reaped = Vec::new();
        let mut cursor = "0-0".to_string();
        loop {
            let k = &self.shared.keys;
            let r = self
                .shared
                .scripts
                .reap
                .key(&k.stream)
                .key(&k.state)
                .key(&k.dead)
                .arg(GROUP)
                .arg(&self.role)
                .arg(stale_after.as_millis() as u64)
                .arg(&cursor)
                .arg(i32::from(count_as_attempt))
                .arg(self.shared.max_retries)
                .invoke_async::<Vec<String>>(&mut self.conn)
                .await;
            let flat = self.seen(r)?;
            let Some((next, jobs)) = flat.split_first() else {
                return Err(bad_reply("reap", "nothing"));
            };
            for j in jobs.chunks_exact(2) {
                let id = j[0].parse().map_err(|_| bad_reply("job id", &j[0]))?;
                reaped.push((id, j[1] == "1"));
            }
            if next == "0-0" {
                return Ok(reaped);
            }
            cursor = next.clone();
        }
    }
}

fn bad_reply(what: &str, got: &str) -> BackendError {
    BackendError::new(
        ErrorClass::Permanent,
        format!("Redis returned an unreadable {what}: {got}"),
    )
}

fn not_held(id: JobId) -> BackendError {
    BackendError::new(
        ErrorClass::Permanent,
        format!("job {id} is not held by this connection"),
    )
}

#[async_trait]
impl Bystand for RedisLink {
    async fn install_bystander(&mut self, rows: u32) -> Result<(), BackendError> {
        let key = self.shared.keys.bystander.clone();
        for chunk in (1..=i64::from(rows)).collect::<Vec<_>>().chunks(1000) {
            let mut cmd = redis::cmd("HSET");
            cmd.arg(&key);
            for id in chunk {
                cmd.arg(*id).arg(0);
            }
            let r = cmd.query_async::<()>(&mut self.conn).await;
            self.seen(r)?;
        }
        Ok(())
    }

    async fn bystander_read(&mut self, id: i64) -> Result<(), BackendError> {
        let r = redis::cmd("HGET")
            .arg(&self.shared.keys.bystander)
            .arg(id)
            .query_async::<Option<i64>>(&mut self.conn)
            .await;
        self.seen(r).map(drop)
    }

    async fn bystander_update(&mut self, id: i64) -> Result<(), BackendError> {
        let r = redis::cmd("HINCRBY")
            .arg(&self.shared.keys.bystander)
            .arg(id)
            .arg(1)
            .query_async::<i64>(&mut self.conn)
            .await;
        self.seen(r).map(drop)
    }
}

impl crate::backend::seam::Link for RedisLink {
    fn bystander(&mut self) -> Option<&mut dyn crate::backend::seam::Bystand> {
        Some(self)
    }
    fn sessions(&mut self) -> Option<&mut dyn crate::backend::seam::Sessions> {
        Some(self)
    }
    fn audit(&mut self) -> Option<&mut dyn crate::backend::seam::Audit> {
        Some(self)
    }
}
