//! What the run's own connections read from a RabbitMQ queue (the sampler, the proof). The
//! broker keeps no record of an acknowledged message, so the proof's view of a job is what
//! the broker still holds: a message in the jobs' or a retry queue is waiting, one in the
//! dead letters is dead-lettered, and a job in none of them is gone. Gone means done only
//! when no consumer is attached (then no message can be out unacknowledged): while workers
//! run, only dead letters are reported. Reading a queue takes its messages and gives them
//! back (redelivered, a lost delivery to a quorum queue), so the connection that settles
//! outcomes during the run ([`crate::backend::link::SETTLE_ROLE`]) never reads the jobs' or retry queues: it found
//! no consumer attached while the run's workers restarted, and its reads were counted as
//! 2,000 redeliveries (and, with redeliveries counted as attempts, would dead-letter jobs).

use super::link::{RabbitLink, describe};
use super::{admin, within};
use crate::backend::broker::{mismatches, untracked};
use crate::backend::error::BackendError;
use crate::backend::figures::{DbSample, TableStats};
use crate::backend::job::{JobId, JobStatus, TableMismatch};
use crate::backend::seam::{Inspect, Sessions};
use async_trait::async_trait;
use lapin::options::{BasicGetOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Instant;

/// The most messages a snapshot reads from one queue.
const SNAPSHOT_LIMIT: usize = 1_000_000;

fn unsupported(what: &str) -> BackendError {
    BackendError::unsupported(what, "RabbitMQ")
}

/// What the broker holds, by job id; `complete` when nothing can be out unacknowledged.
struct Snapshot {
    held: HashMap<JobId, (JobStatus, String)>,
    complete: bool,
}

impl RabbitLink {
    /// (ready messages, consumers) of `queue`, by a passive declaration.
    async fn queue_counts(&mut self, queue: &str) -> Result<(i64, i64), BackendError> {
        let passive = QueueDeclareOptions {
            passive: true,
            ..QueueDeclareOptions::default()
        };
        let channel = within(self.conn.create_channel()).await;
        let channel = self.seen(channel)?;
        let q = within(channel.queue_declare(queue.into(), passive, FieldTable::default())).await;
        let q = self.seen(q)?;
        super::close_channel(&channel).await;
        Ok((q.message_count() as i64, q.consumer_count() as i64))
    }

    /// (waiting in the jobs' and retry queues, dead letters, consumers of the jobs' queue).
    async fn counts(&mut self) -> Result<(i64, i64, i64), BackendError> {
        let (mut waiting, consumers) = self.queue_counts(&self.shared.jobs()).await?;
        let (dead, _) = self.queue_counts(&self.shared.dead()).await?;
        for queue in self.shared.all_queues().into_iter().skip(2) {
            waiting += self.queue_counts(&queue).await?.0;
        }
        Ok((waiting, dead, consumers))
    }

    /// Reads the messages of `queue` (`basic.get`, unacknowledged) on a channel of its own
    /// and closes the channel, which gives them all back.
    async fn read_queue(&mut self, queue: &str) -> Result<Vec<(JobId, String)>, BackendError> {
        let channel = within(self.conn.create_channel()).await;
        let channel = self.seen(channel)?;
        let mut out = Vec::new();
        while out.len() < SNAPSHOT_LIMIT {
            let got =
                within(channel.basic_get(queue.into(), BasicGetOptions { no_ack: false })).await;
            let Some(message) = self.seen(got)? else {
                break;
            };
            let (id, ..) = describe(&message.delivery.properties)?;
            let key = crate::backend::broker::payload_key(&message.delivery.data)
                .unwrap_or_default()
                .to_string();
            out.push((id, key));
        }
        super::close_channel(&channel).await;
        Ok(out)
    }

    /// The broker's own figures from its management API; none when there is no API or it
    /// does not answer (the sampler goes on with what AMQP says).
    async fn server_figures(&self) -> BTreeMap<String, i64> {
        let Some(admin) = &self.shared.admin else {
            return BTreeMap::new();
        };
        let (jobs, dead) = (self.shared.jobs(), self.shared.dead());
        let asked = tokio::try_join!(admin.queue(&jobs), admin.queue(&dead), admin.node());
        match asked {
            Ok((jobs, dead, node)) => admin::figures(&jobs, &dead, &node),
            Err(_) => BTreeMap::new(),
        }
    }

    /// What the broker holds now: only the dead letters while consumers are attached.
    async fn snapshot(&mut self) -> Result<Snapshot, BackendError> {
        let (_, _, consumers) = self.counts().await?;
        // While the run's workers work, a worker between lives leaves no consumer attached
        // for a moment; the settling connection must not take the queue's messages then.
        let complete = consumers == 0 && !self.settling;
        let mut held = HashMap::new();
        for (id, key) in self.read_queue(&self.shared.dead()).await? {
            held.insert(id, (JobStatus::DeadLetter, key));
        }
        if complete {
            for queue in self.shared.all_queues() {
                if queue == self.shared.dead() {
                    continue;
                }
                for (id, key) in self.read_queue(&queue).await? {
                    held.entry(id).or_insert((JobStatus::Pending, key));
                }
            }
        }
        Ok(Snapshot { held, complete })
    }
}

#[async_trait]
impl Inspect for RabbitLink {
    /// Messages waiting (jobs and retries) and dead letters, counted over AMQP; what is
    /// out unacknowledged, the memory and the counts come from the management API (which
    /// refreshes them once a second), when it answers.
    async fn sample(&mut self, full: bool) -> Result<DbSample, BackendError> {
        let started = Instant::now();
        let (waiting, dead, _) = self.counts().await?;
        let server = self.server_figures().await;
        let figure = |name: &str| server.get(name).copied();
        Ok(DbSample {
            pending: waiting,
            processing: figure("unacked"),
            dead_letter: full.then_some(dead),
            sample_ms: started.elapsed().as_secs_f64() * 1000.0,
            held: waiting + dead,
            total_bytes: figure("node_memory_bytes").unwrap_or(0),
            server,
            ..DbSample::default()
        })
    }

    async fn table_stats(&mut self) -> Result<TableStats, BackendError> {
        let (waiting, dead, _) = self.counts().await?;
        Ok(TableStats {
            live_tuples: waiting + dead,
            ..TableStats::default()
        })
    }

    async fn status_counts(&mut self) -> Result<Vec<(String, i64)>, BackendError> {
        let (waiting, dead, _) = self.counts().await?;
        Ok(vec![
            ("pending".into(), waiting),
            ("dead_letter".into(), dead),
        ])
    }

    async fn job_statuses(
        &mut self,
        ids: &[JobId],
    ) -> Result<Vec<(JobId, JobStatus, Option<i32>)>, BackendError> {
        let snap = self.snapshot().await?;
        Ok(ids
            .iter()
            .filter_map(|id| match snap.held.get(id) {
                Some((status, _)) => Some((*id, *status, None)),
                None if snap.complete => Some((*id, JobStatus::Done, None)),
                None => None,
            })
            .collect())
    }

    /// Only jobs still held can be found by key.
    async fn jobs_by_key(&mut self, keys: &[String]) -> Result<Vec<(JobId, String)>, BackendError> {
        let wanted: HashSet<&str> = keys.iter().map(String::as_str).collect();
        let snap = self.snapshot().await?;
        Ok(snap
            .held
            .into_iter()
            .filter(|(_, (_, k))| wanted.contains(k.as_str()))
            .map(|(id, (_, k))| (id, k))
            .collect())
    }

    async fn table_mismatches(
        &mut self,
        ids: &[JobId],
        expected: &[&str],
    ) -> Result<Vec<TableMismatch>, BackendError> {
        let snap = self.snapshot().await?;
        Ok(mismatches(ids, expected, |id, expected| {
            match snap.held.get(&id) {
                Some((s, _)) => s.as_str().to_string(),
                // Gone from the broker: acknowledged, as the ledger says, or lost.
                None if snap.complete && expected == "done" => "done".to_string(),
                None if snap.complete => "missing".to_string(),
                None => "unknown (consumers attached)".to_string(),
            }
        }))
    }

    async fn untracked_between(
        &mut self,
        known: &[JobId],
        from: JobId,
        to: JobId,
    ) -> Result<Vec<(JobId, String)>, BackendError> {
        let snap = self.snapshot().await?;
        let held = snap.held.into_iter();
        let held = held.map(|(id, (s, _))| (id, s.as_str().to_string()));
        Ok(untracked(held, known, from, to))
    }
}

#[async_trait]
impl Sessions for RabbitLink {
    /// Closes `count` of the run's connections of `roles`, picked at random, through the
    /// management API (`rabbitmqctl close_connection` does the same). Only connections the
    /// API already lists can be picked: one opened in the last few seconds is not yet known
    /// by name, so the count closed may be lower (the fault's event says how many).
    async fn terminate_sessions(
        &mut self,
        roles: &[&str],
        count: u32,
    ) -> Result<(&'static str, u64), BackendError> {
        let admin = self.shared.admin.as_ref().ok_or_else(|| {
            unsupported("kill_backends without the management API (a queue attached in a worker)")
        })?;
        let prefix = format!("dbq-bench/{}/", self.shared.namespace);
        let mut names: Vec<String> = admin
            .connections(&prefix)
            .await?
            .into_iter()
            .filter(|(_, role)| roles.iter().any(|r| role.starts_with(r)))
            .map(|(name, _)| name)
            .collect();
        rand::seq::SliceRandom::shuffle(names.as_mut_slice(), &mut rand::rng());
        let mut closed = 0;
        for name in &names {
            if closed == u64::from(count) {
                break;
            }
            closed += u64::from(admin.close_connection(name).await?);
        }
        Ok(("close_connection", closed))
    }
}
