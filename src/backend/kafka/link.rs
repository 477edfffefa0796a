//! One connection to a Kafka queue: what producers and workers do on it. Every link has a
//! producer (`acks=all`, idempotent: a job is enqueued when the broker acknowledges its
//! record); a worker's link also has a consumer in the queue's group, made on its first
//! claim, which commits offsets only by hand, after the handler. A record the harness did
//! not write is set aside unrun: its offset goes with the next commit of its partition that
//! no held record precedes (the proof names it from the log).

use super::record::{Described, headers, now_ms, read_job};
use super::{ANSWER_WITHIN, Shared};
use crate::backend::broker::backoff_ms;
use crate::backend::error::{BackendError, ErrorClass};
use crate::backend::job::{ClaimedJob, FailOutcome, Handout, JobId, NewJob};
use crate::backend::queue::ClaimMode;
use crate::backend::seam::{Connection, Enqueue, Work};
use async_trait::async_trait;
use futures_util::FutureExt;
use rdkafka::consumer::{CommitMode, Consumer, StreamConsumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Message, OwnedHeaders, OwnedMessage};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How long a claim waits for a record: the consumer fetches in the background, so a
/// record that has arrived is handed over at once; an empty claim costs at most this.
const PUSH_WAIT: Duration = Duration::from_millis(20);

/// How long the group may go without a member's heartbeat before it takes the member's
/// partitions away (Kafka's lowest allowed by default): how long a crashed worker's jobs
/// wait before another worker reads them again.
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(6);

/// How long a member may go between polls before the group counts it gone, which is also
/// how long a rebalance waits for every member to rejoin (Kafka's `max.poll.interval.ms`,
/// 5 minutes by default). A worker killed without leaving never rejoins: Tansu 0.6.0 then
/// holds the whole group until this runs out (an independent rdkafka load, three members
/// SIGKILLed and restarted, stopped at 449 of 600 records for over 15 s with the default,
/// and read all 600 within 10 s with 8 s). A handler longer than this loses its partitions.
pub const POLL_INTERVAL_MAX: Duration = Duration::from_secs(10);

/// A record this worker holds, its offset not yet committed.
struct Held {
    record: OwnedMessage,
    described: Described,
}

pub struct KafkaLink {
    pub(super) shared: Arc<Shared>,
    pub(super) role: String,
    producer: FutureProducer,
    /// The worker's group membership, made on the first claim.
    consumer: Option<Arc<StreamConsumer>>,
    held: HashMap<JobId, Held>,
    /// Records the harness did not write, passed over and not yet committed.
    skipped: Vec<OwnedMessage>,
    /// What the run's inspecting connections read with (no group membership).
    pub(super) reader: Option<super::reader::Reader>,
}

impl KafkaLink {
    /// A link in `role`, its producer connected and knowing the jobs' topic.
    pub async fn open(shared: Arc<Shared>, role: &str) -> Result<KafkaLink, BackendError> {
        let client = format!("dbq-bench/{}/{role}", shared.namespace);
        let producer: FutureProducer = shared
            .config(&[
                ("client.id", &client),
                ("acks", "all"),
                ("enable.idempotence", "true"),
                ("linger.ms", "0"),
                // A record whose topic the broker lost waits for its delivery report until
                // this runs out (librdkafka's default: 5 minutes), and the run with it.
                ("message.timeout.ms", &ANSWER_WITHIN.as_millis().to_string()),
            ])
            .create()?;
        // Open once the producer knows where the jobs' partitions are: otherwise a link's
        // first job waits for that (about 1 s on Tansu 0.6.0), which a step's first seconds
        // measured as the queue's enqueue latency.
        let knows = producer.clone();
        let jobs = shared.topics.jobs.clone();
        tokio::task::spawn_blocking(move || {
            knows.client().fetch_metadata(Some(&jobs), ANSWER_WITHIN)
        })
        .await
        .map_err(|e| BackendError::new(ErrorClass::Connection, e.to_string()))??;
        Ok(KafkaLink {
            shared,
            role: role.to_string(),
            producer,
            consumer: None,
            held: HashMap::new(),
            skipped: Vec::new(),
            reader: None,
        })
    }

    /// Produces a job's record to `topic` and waits for the broker's acknowledgement: where
    /// the record lies (partition, offset).
    async fn produce(
        &self,
        topic: &str,
        id: JobId,
        payload: &[u8],
        headers: OwnedHeaders,
    ) -> Result<(i32, i64), BackendError> {
        let key = id.to_string();
        let record = FutureRecord::to(topic)
            .key(&key)
            .payload(payload)
            .headers(headers);
        match self.producer.send(record, ANSWER_WITHIN).await {
            Ok(d) => Ok((d.partition, d.offset)),
            Err((e, _)) => Err(e.into()),
        }
    }

    /// Produces a new job's record to the jobs' topic and notes where the broker put it.
    async fn produce_job(&self, id: JobId, job: &NewJob) -> Result<(), BackendError> {
        let h = headers(id, &job.job_type, 0, &[]);
        let jobs = &self.shared.topics.jobs;
        let (partition, offset) = self.produce(jobs, id, job.payload.as_bytes(), h).await?;
        self.shared.delivered.note(id, partition, offset);
        Ok(())
    }

    /// The worker's consumer, joining the group on first use.
    fn consumer(&mut self) -> Result<Arc<StreamConsumer>, BackendError> {
        if let Some(c) = &self.consumer {
            return Ok(c.clone());
        }
        let client = format!("dbq-bench/{}/{}", self.shared.namespace, self.role);
        let session = SESSION_TIMEOUT.as_millis().to_string();
        let poll_max = POLL_INTERVAL_MAX.as_millis().to_string();
        let t = &self.shared.topics;
        let consumer: StreamConsumer = self
            .shared
            .config(&[
                ("client.id", &client),
                ("group.id", &t.group),
                ("enable.auto.commit", "false"),
                ("auto.offset.reset", "earliest"),
                ("session.timeout.ms", &session),
                ("heartbeat.interval.ms", "1000"),
                ("max.poll.interval.ms", &poll_max),
            ])
            .create()?;
        consumer.subscribe(&[&t.jobs, &t.retry])?;
        let consumer = Arc::new(consumer);
        self.consumer = Some(consumer.clone());
        Ok(consumer)
    }

    /// Commits the offsets after `records` (their partitions' next records). A commit the
    /// group refuses because the partitions moved to another member is stale: `Ok(false)`.
    async fn commit(&mut self, records: &[&OwnedMessage]) -> Result<bool, BackendError> {
        let mut next: HashMap<(String, i32), i64> = HashMap::new();
        for r in records.iter().copied().chain(self.passable()) {
            let at = next
                .entry((r.topic().to_string(), r.partition()))
                .or_insert(0);
            *at = (*at).max(r.offset() + 1);
        }
        if next.is_empty() {
            return Ok(true);
        }
        let mut list = TopicPartitionList::new();
        for ((topic, partition), offset) in next {
            list.add_partition_offset(&topic, partition, Offset::Offset(offset))?;
        }
        let consumer = self.consumer()?;
        let committed =
            tokio::task::spawn_blocking(move || consumer.commit(&list, CommitMode::Sync))
                .await
                .map_err(|e| BackendError::new(ErrorClass::Connection, e.to_string()))?;
        let passed: Vec<(String, i32, i64)> = self.passable().map(at).collect();
        self.skipped.retain(|s| !passed.contains(&at(s)));
        match committed {
            Ok(()) => Ok(true),
            Err(e) if moved_away(&e) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// The passed-over records no held record precedes in their partition: committing past
    /// them commits no job still running.
    fn passable(&self) -> impl Iterator<Item = &OwnedMessage> {
        self.skipped.iter().filter(|s| {
            !self.held.values().any(|h| {
                let r = &h.record;
                r.topic() == s.topic() && r.partition() == s.partition() && r.offset() < s.offset()
            })
        })
    }

    /// A record as a claimed job (and held until its offset is committed), or passed over
    /// (`None`) when the harness did not write it. A retry whose back-off has not ended is
    /// waited for here.
    async fn take(&mut self, record: OwnedMessage) -> Option<ClaimedJob> {
        let Ok((described, payload)) = read_job(&record) else {
            self.skipped.push(record);
            return None;
        };
        let wait = described.due_ms - now_ms();
        if wait > 0 {
            tokio::time::sleep(Duration::from_millis(wait as u64)).await;
        }
        let job = ClaimedJob {
            id: described.id,
            job_type: described.job_type.clone(),
            payload,
            handout: Handout::Queued,
        };
        self.held.insert(job.id, Held { record, described });
        Some(job)
    }
}

/// Where a record lies: (topic, partition, offset).
fn at(r: &OwnedMessage) -> (String, i32, i64) {
    (r.topic().to_string(), r.partition(), r.offset())
}

/// The group refused a commit because the member no longer owns the partition.
fn moved_away(e: &KafkaError) -> bool {
    use RDKafkaErrorCode as C;
    matches!(
        e.rdkafka_error_code(),
        Some(
            C::IllegalGeneration
                | C::UnknownMemberId
                | C::RebalanceInProgress
                | C::NotCoordinator
                | C::State
                | C::AssignmentLost
        )
    )
}

#[async_trait]
impl Connection for KafkaLink {
    async fn close(self: Box<Self>) {
        if let Some(c) = &self.consumer {
            c.unsubscribe();
        }
    }
}

#[async_trait]
impl Enqueue for KafkaLink {
    async fn enqueue(&mut self, job: &NewJob) -> Result<JobId, BackendError> {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        self.produce_job(id, job).await?;
        Ok(id)
    }

    /// Every record sent at once (the producer batches them), each acknowledged.
    async fn enqueue_batch(&mut self, jobs: &[NewJob]) -> Result<Vec<JobId>, BackendError> {
        let ids: Vec<JobId> = jobs
            .iter()
            .map(|_| self.shared.next_id.fetch_add(1, Ordering::Relaxed) + 1)
            .collect();
        let sends = jobs
            .iter()
            .zip(&ids)
            .map(|(job, id)| self.produce_job(*id, job));
        for sent in futures_util::future::join_all(sends).await {
            sent?;
        }
        Ok(ids)
    }
}

#[async_trait]
impl Work for KafkaLink {
    /// Waits up to [`PUSH_WAIT`] for a record, then takes what else the consumer has
    /// fetched, up to the claim batch.
    async fn claim(&mut self, _mode: ClaimMode) -> Result<Vec<ClaimedJob>, BackendError> {
        let batch = self.shared.info.claim_batch as usize;
        let consumer = self.consumer()?;
        let mut records = Vec::new();
        match tokio::time::timeout(PUSH_WAIT, consumer.recv()).await {
            Err(_) => return Ok(Vec::new()),
            Ok(first) => records.push(first?.detach()),
        }
        while records.len() < batch {
            match consumer.recv().now_or_never() {
                Some(next) => records.push(next?.detach()),
                None => break,
            }
        }
        let mut jobs = Vec::with_capacity(records.len());
        let skipped = self.skipped.len();
        for r in records {
            jobs.extend(self.take(r).await);
        }
        if self.skipped.len() > skipped && !self.commit(&[]).await? {
            // The partition moved away: its new owner passes the record over in turn.
            self.skipped.clear();
        }
        Ok(jobs)
    }

    async fn idle(&mut self, _mode: ClaimMode) -> Result<(), BackendError> {
        Ok(())
    }

    /// The retry (or dead letter) produced and acknowledged, then the record's offset
    /// committed: a crash between the two runs the job again from its original record.
    async fn fail(&mut self, id: JobId, error: &str) -> Result<FailOutcome, BackendError> {
        let Some(held) = self.held.remove(&id) else {
            return Err(BackendError::new(
                ErrorClass::Permanent,
                format!("job {id} is not held by this connection"),
            ));
        };
        let d = &held.described;
        let retries = d.retries + 1;
        let payload = held.record.payload().unwrap_or(b"{}").to_vec();
        let outcome = if retries >= self.shared.max_retries {
            let dead = self.shared.topics.dead.clone();
            let h = headers(id, &d.job_type, retries, &[("error", error)]);
            self.produce(&dead, id, &payload, h).await?;
            FailOutcome::DeadLettered
        } else {
            let due = now_ms() + backoff_ms(&self.shared.backoff, d.retries) as i64;
            let retry = self.shared.topics.retry.clone();
            let h = headers(id, &d.job_type, retries, &[("due", &due.to_string())]);
            self.produce(&retry, id, &payload, h).await?;
            FailOutcome::Retry
        };
        match self.commit(&[&held.record]).await? {
            true => Ok(outcome),
            false => Ok(FailOutcome::Stale),
        }
    }

    /// Commits the records of `done`; all of them are stale when the group refused.
    async fn finish(
        &mut self,
        _mode: ClaimMode,
        done: &[JobId],
    ) -> Result<Vec<JobId>, BackendError> {
        let held: Vec<Held> = done.iter().filter_map(|id| self.held.remove(id)).collect();
        if held.is_empty() {
            return Ok(Vec::new());
        }
        let records: Vec<&OwnedMessage> = held.iter().map(|h| &h.record).collect();
        match self.commit(&records).await? {
            true => Ok(Vec::new()),
            false => Ok(held.iter().map(|h| h.described.id).collect()),
        }
    }

    /// Leaves the group (its records go back to the group uncommitted) and joins again on
    /// the next claim.
    async fn recover(&mut self, _mode: ClaimMode) -> bool {
        self.held.clear();
        self.skipped.clear();
        if let Some(c) = self.consumer.take() {
            c.unsubscribe();
        }
        true
    }

    /// Nothing to reap: the group gives a vanished member's partitions to another.
    async fn reap(
        &mut self,
        _stale_after: Duration,
        _count_as_attempt: bool,
    ) -> Result<Vec<(JobId, bool)>, BackendError> {
        Ok(Vec::new())
    }
}

impl crate::backend::seam::Link for KafkaLink {
    fn group(&mut self) -> Option<&mut dyn crate::backend::seam::Group> {
        Some(self)
    }
    fn provenance(&mut self) -> Option<&mut dyn crate::backend::seam::Provenance> {
        Some(self)
    }
}
