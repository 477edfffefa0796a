//! One connection to a RabbitMQ queue: what producers and workers do on it. Producers
//! publish on a channel in confirm mode (a job is enqueued when the broker confirms it).
//! Workers consume on a channel in transaction mode: a completion is `basic.ack` and
//! `tx.commit`, a failure publishes the retry (or dead letter) and acknowledges the delivery
//! in one transaction, so the broker has taken the outcome when the worker goes on (an
//! acknowledgement outside a transaction is not confirmed, and a broker crash right after it
//! delivers the job again).

use super::{Shared, within};
use crate::backend::broker::backoff_ms;
use crate::backend::error::{BackendError, ErrorClass};
use crate::backend::job::{ClaimedJob, FailOutcome, Handout, JobId, JobPayload, NewJob};
use crate::backend::queue::ClaimMode;
use crate::backend::seam::{Connection, Enqueue, Work};
use async_trait::async_trait;
use futures_util::{FutureExt, StreamExt};
use lapin::message::Delivery;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicPublishOptions, BasicQosOptions,
    ConfirmSelectOptions,
};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Channel, Consumer};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How long a claim waits for a push. With a prefetch of one the broker pushes the next
/// message only after the last acknowledgement, one round trip later: a claim that did not
/// wait would find nothing and send the worker to sleep. This is the claim's cost on a broker,
/// as a statement's round trip is on a database; an empty claim costs at most this.
const PUSH_WAIT: Duration = Duration::from_millis(20);

/// The header that counts a job's failed attempts.
const RETRIES: &str = "x-dbq-retries";

/// The header a quorum queue gives a message it delivers again: how many of its deliveries
/// came back unacknowledged (its consumer's channel or connection went).
const DELIVERY_COUNT: &str = "x-delivery-count";

/// A delivery this worker holds, unacknowledged.
struct Held {
    delivery: Delivery,
    /// Its failed attempts: the failures, and with redeliveries counted, the lost runs.
    retries: i32,
}

pub struct RabbitLink {
    pub(super) conn: lapin::Connection,
    /// Publishes jobs, in confirm mode.
    channel: Channel,
    pub(super) shared: Arc<Shared>,
    /// The worker's channel (transaction mode) and its consumer, opened on the first claim.
    work: Option<(Channel, Consumer)>,
    held: HashMap<JobId, Held>,
    broken: bool,
    /// The connection settles outcomes while the run's workers work
    /// ([`crate::backend::link::SETTLE_ROLE`]): it must not read the waiting messages.
    pub(super) settling: bool,
}

impl RabbitLink {
    pub async fn open(
        conn: lapin::Connection,
        shared: Arc<Shared>,
        role: &str,
    ) -> Result<Self, BackendError> {
        let channel = within(async {
            let channel = conn.create_channel().await?;
            shared.declare(&channel).await?;
            channel
                .confirm_select(ConfirmSelectOptions::default())
                .await?;
            Ok(channel)
        })
        .await?;
        Ok(RabbitLink {
            conn,
            channel,
            shared,
            work: None,
            held: HashMap::new(),
            broken: false,
            settling: role == crate::backend::link::SETTLE_ROLE,
        })
    }

    /// The result, its error classified, the link marked broken on a connection error.
    pub(super) fn seen<T>(&mut self, r: lapin::Result<T>) -> Result<T, BackendError> {
        r.map_err(|e| {
            let e = BackendError::from(e);
            self.broken |= e.is_connection();
            e
        })
    }

    /// Persistent messages where the queue is durable.
    fn delivery_mode(&self, props: BasicProperties) -> BasicProperties {
        match self.shared.durable() {
            true => props.with_delivery_mode(2),
            false => props.with_delivery_mode(1),
        }
    }

    /// Publishes a job to `queue` and waits for the broker's confirm.
    async fn publish(
        &mut self,
        queue: &str,
        body: &[u8],
        props: BasicProperties,
    ) -> Result<(), BackendError> {
        let props = self.delivery_mode(props);
        let sent = within(self.channel.basic_publish(
            "".into(),
            queue.into(),
            BasicPublishOptions::default(),
            body,
            props,
        ))
        .await;
        let confirm = self.seen(sent)?;
        let confirmed = within(confirm).await;
        let confirmation = self.seen(confirmed)?;
        if confirmation.is_nack() {
            return Err(BackendError::new(
                ErrorClass::Transient,
                format!("the broker refused the message for {queue} (basic.nack)"),
            ));
        }
        Ok(())
    }

    /// This link's work channel and consumer, started on first use: transaction mode, the
    /// claim batch as the prefetch.
    async fn work(&mut self) -> Result<&mut (Channel, Consumer), BackendError> {
        if self.work.is_none() {
            let opened = within(self.open_work()).await;
            self.work = Some(self.seen(opened)?);
        }
        Ok(self.work.as_mut().expect("just opened"))
    }

    async fn open_work(&self) -> lapin::Result<(Channel, Consumer)> {
        let channel = self.conn.create_channel().await?;
        channel.tx_select().await?;
        let prefetch = self.shared.info.claim_batch.min(u16::MAX as u32) as u16;
        channel
            .basic_qos(prefetch, BasicQosOptions::default())
            .await?;
        let consumer = channel
            .basic_consume(
                self.shared.jobs().into(),
                "".into(),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await?;
        Ok((channel, consumer))
    }

    /// Commits what the work channel did since its last commit.
    async fn commit(&mut self) -> Result<(), BackendError> {
        let Some((channel, _)) = &self.work else {
            return Ok(());
        };
        let committed = within(channel.tx_commit()).await;
        self.seen(committed)
    }

    /// A delivery as a claimed job (and held until acknowledged). With redeliveries
    /// counted as attempts, a job delivered again once too often goes to the dead letters
    /// here instead of to the worker.
    async fn take(&mut self, delivery: Delivery) -> Result<ClaimedJob, BackendError> {
        let (id, job_type, mut retries) = describe(&delivery.properties)?;
        let payload: JobPayload = serde_json::from_slice(&delivery.data).map_err(|e| {
            BackendError::new(ErrorClass::Permanent, format!("job {id}: payload: {e}"))
        })?;
        let counted = self.shared.redeliveries_count;
        let lost_runs = delivery_count(&delivery.properties);
        if counted {
            retries += lost_runs;
        }
        let mut handout = match delivery.redelivered {
            true => Handout::Redelivered { counted },
            false => Handout::Queued,
        };
        let held = Held { delivery, retries };
        if counted && lost_runs > 0 && retries >= self.shared.max_retries {
            let why = format!("delivered again {lost_runs} time(s): its runs were lost");
            let dead = self.shared.dead();
            self.move_to(&dead, id, &job_type, &held, Some(&why))
                .await?;
            self.commit().await?;
            handout = Handout::DeadLettered;
        } else {
            self.held.insert(id, held);
        }
        Ok(ClaimedJob {
            id,
            job_type,
            payload,
            handout,
        })
    }

    /// Publishes `held`'s job to `queue` with `retries` in its header (and `error`, for the
    /// dead letters), and acknowledges the delivery, in the work channel's transaction
    /// (committed by the caller).
    async fn move_to(
        &mut self,
        queue: &str,
        id: JobId,
        job_type: &str,
        held: &Held,
        error: Option<&str>,
    ) -> Result<(), BackendError> {
        let mut props = properties(id, job_type, held.retries);
        if let Some(error) = error {
            let mut headers = props.headers().clone().unwrap_or_default();
            headers.insert("x-dbq-error".into(), AMQPValue::LongString(error.into()));
            props = props.with_headers(headers);
        } else {
            let delay = backoff_ms(&self.shared.backoff, held.retries - 1);
            props = props.with_expiration(delay.to_string().into());
        }
        let props = self.delivery_mode(props);
        let (channel, _) = self.work().await?;
        let sent = within(channel.basic_publish(
            "".into(),
            queue.into(),
            BasicPublishOptions::default(),
            &held.delivery.data,
            props,
        ))
        .await
        .map(drop);
        self.seen(sent)?;
        let acked = within(held.delivery.acker.ack(BasicAckOptions::default())).await;
        self.seen(acked).map(drop)
    }
}

/// How many of a message's deliveries came back unacknowledged, from a quorum queue's
/// header (0 where there is none: a first delivery, or a classic queue).
fn delivery_count(p: &BasicProperties) -> i32 {
    let value = p
        .headers()
        .as_ref()
        .and_then(|h| h.inner().get(DELIVERY_COUNT).cloned());
    match value {
        Some(AMQPValue::LongLongInt(n)) => n.clamp(0, i32::MAX as i64) as i32,
        Some(AMQPValue::LongInt(n)) => n.max(0),
        Some(AMQPValue::LongUInt(n)) => n.min(i32::MAX as u32) as i32,
        Some(AMQPValue::ShortInt(n)) => i32::from(n.max(0)),
        Some(AMQPValue::ShortShortInt(n)) => i32::from(n.max(0)),
        _ => 0,
    }
}

/// A message's job id, type and failed attempts, from its properties.
pub(super) fn describe(p: &BasicProperties) -> Result<(JobId, String, i32), BackendError> {
    let id = p
        .message_id()
        .as_ref()
        .and_then(|m| m.as_str().parse().ok())
        .ok_or_else(|| BackendError::new(ErrorClass::Permanent, "a message without a job id"))?;
    let job_type = p
        .kind()
        .as_ref()
        .map(|k| k.as_str().to_string())
        .unwrap_or_default();
    let retries = p
        .headers()
        .as_ref()
        .and_then(|h| match h.inner().get(RETRIES) {
            Some(AMQPValue::LongInt(n)) => Some(*n),
            _ => None,
        })
        .unwrap_or(0);
    Ok((id, job_type, retries))
}

fn properties(id: JobId, job_type: &str, retries: i32) -> BasicProperties {
    let mut headers = FieldTable::default();
    headers.insert(RETRIES.into(), AMQPValue::LongInt(retries));
    BasicProperties::default()
        .with_message_id(id.to_string().into())
        .with_type(job_type.into())
        .with_headers(headers)
}

#[async_trait]
impl Connection for RabbitLink {
    async fn close(self: Box<Self>) {
        super::hang_up(&self.conn).await;
    }
}

#[async_trait]
impl Enqueue for RabbitLink {
    async fn enqueue(&mut self, job: &NewJob) -> Result<JobId, BackendError> {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let jobs = self.shared.jobs();
        let props = properties(id, &job.job_type, 0);
        self.publish(&jobs, job.payload.as_bytes(), props).await?;
        Ok(id)
    }

    async fn enqueue_batch(&mut self, jobs: &[NewJob]) -> Result<Vec<JobId>, BackendError> {
        let mut ids = Vec::with_capacity(jobs.len());
        for job in jobs {
            ids.push(self.enqueue(job).await?);
        }
        Ok(ids)
    }
}

#[async_trait]
impl Work for RabbitLink {
    /// Waits up to [`PUSH_WAIT`] for the broker to push a delivery, then takes what else it
    /// has pushed, up to the prefetch, without waiting. An empty claim is followed by the
    /// worker's poll interval, as on every backend.
    async fn claim(&mut self, _mode: ClaimMode) -> Result<Vec<ClaimedJob>, BackendError> {
        let batch = self.shared.info.claim_batch as usize;
        let (_, consumer) = self.work().await?;
        let mut deliveries = Vec::new();
        match tokio::time::timeout(PUSH_WAIT, consumer.next()).await {
            Err(_) => return Ok(Vec::new()),
            Ok(first) => deliveries.push(first),
        }
        while deliveries.len() < batch {
            match consumer.next().now_or_never() {
                Some(next) => deliveries.push(next),
                None => break,
            }
        }
        let mut jobs = Vec::with_capacity(deliveries.len());
        for d in deliveries {
            let d = d.ok_or_else(|| {
                BackendError::new(ErrorClass::Connection, "the broker cancelled the consumer")
            });
            let d = match d {
                Ok(Ok(d)) => d,
                Ok(Err(e)) => return Err(self.seen::<()>(Err(e)).unwrap_err()),
                Err(e) => {
                    self.broken = true;
                    return Err(e);
                }
            };
            jobs.push(self.take(d).await?);
        }
        Ok(jobs)
    }

    async fn idle(&mut self, _mode: ClaimMode) -> Result<(), BackendError> {
        Ok(())
    }

    async fn fail(&mut self, id: JobId, error: &str) -> Result<FailOutcome, BackendError> {
        let Some(held) = self.held.remove(&id) else {
            return Err(BackendError::new(
                ErrorClass::Permanent,
                format!("job {id} is not held by this connection"),
            ));
        };
        let held = Held {
            retries: held.retries + 1,
            ..held
        };
        let (_, job_type, _) = describe(&held.delivery.properties)?;
        let outcome = if held.retries >= self.shared.max_retries {
            let dead = self.shared.dead();
            self.move_to(&dead, id, &job_type, &held, Some(error))
                .await?;
            FailOutcome::DeadLettered
        } else {
            let retry = self.shared.retry(held.retries);
            self.move_to(&retry, id, &job_type, &held, None).await?;
            FailOutcome::Retry
        };
        self.commit().await?;
        Ok(outcome)
    }

    /// A delivery is acknowledged on the channel that received it, or not at all (a closed
    /// channel gave it back): a completion here is never stale, it takes effect or fails.
    async fn finish(
        &mut self,
        _mode: ClaimMode,
        done: &[JobId],
    ) -> Result<Vec<JobId>, BackendError> {
        for id in done {
            if let Some(held) = self.held.remove(id) {
                let acked = within(held.delivery.acker.ack(BasicAckOptions::default())).await;
                self.seen(acked)?;
            }
        }
        self.commit().await.map(|()| Vec::new())
    }

    /// Gives back what this worker holds, as a rollback would: the work channel is closed,
    /// which returns its unacknowledged deliveries to the queue, and opened again on the next
    /// claim.
    async fn recover(&mut self, _mode: ClaimMode) -> bool {
        self.held.clear();
        if let Some((channel, _)) = self.work.take()
            && !super::close_channel(&channel).await
        {
            self.broken = true;
        }
        !self.broken
    }

    /// Nothing to reap: the broker delivers a vanished consumer's messages again by itself.
    async fn reap(
        &mut self,
        _stale_after: Duration,
        _count_as_attempt: bool,
    ) -> Result<Vec<(JobId, bool)>, BackendError> {
        Ok(Vec::new())
    }
}

impl crate::backend::seam::Link for RabbitLink {
    fn sessions(&mut self) -> Option<&mut dyn crate::backend::seam::Sessions> {
        Some(self)
    }
}
