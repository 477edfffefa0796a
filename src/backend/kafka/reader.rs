//! What the proof and the sampler read a Kafka queue with: a consumer that belongs to no
//! group (it only asks the workers' group for its committed offsets), which reads the topics'
//! watermarks and walks their records from each partition's start (a reader remembers what it
//! walked and reads only what was added since). Reading takes nothing from the workers. Every
//! call blocks in librdkafka, so each runs on a blocking thread.

use super::record::{describe, foreign};
use super::{ANSWER_WITHIN, Shared};
use crate::backend::error::{BackendError, ErrorClass};
use crate::backend::figures::GroupView;
use crate::backend::job::JobId;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A consumer of no group's membership (it only asks the workers' group for its offsets).
pub struct Reader {
    consumer: Arc<BaseConsumer>,
    /// What earlier walks read, by topic and partition: a walk reads only what was added
    /// since (a settle during the drain and the proof's questions each walk every topic).
    walked: HashMap<String, HashMap<i32, Walked>>,
    pub progress: Progress,
}

/// Each partition's committed offset when last read, and since when it has held records
/// waiting at that offset (`None`: none waiting).
#[derive(Default)]
pub struct Progress(HashMap<(String, i32), (i64, Option<Instant>)>);

/// Partitions whose waiting records no member has committed past for a while: the group
/// is not reading them (unassigned, or held by a member that stopped).
#[derive(Debug, Default, PartialEq)]
pub struct Stall {
    pub partitions: i64,
    pub longest: Duration,
}

/// One partition's records read so far, and the offset after the last of them.
#[derive(Default)]
struct Walked {
    records: Vec<Record>,
    next: i64,
}

/// One record as the proof reads it.
#[derive(Debug, Clone)]
pub struct Record {
    /// 0 jobs, 1 retries, 2 dead letters: a later stage of a job's life.
    pub stage: u8,
    pub retries: i32,
    pub partition: i32,
    pub offset: i64,
    pub committed: bool,
    /// 0 where the record names none.
    pub id: JobId,
    pub key: String,
    /// Why the harness cannot have written it (`record::foreign`).
    pub foreign: Option<String>,
}

/// Where each partition of a topic stands: (partition, low, high, committed).
pub type Marks = Vec<(i32, i64, i64, i64)>;

/// The partitions of `topic` the broker knows (none when it does not know the topic).
fn known_partitions(
    c: &BaseConsumer,
    topic: &str,
) -> Result<HashSet<i32>, rdkafka::error::KafkaError> {
    let md = c.fetch_metadata(Some(topic), ANSWER_WITHIN)?;
    Ok(md
        .topics()
        .iter()
        .filter(|t| t.name() == topic && t.error().is_none())
        .flat_map(|t| t.partitions().iter().map(|p| p.id()))
        .collect())
}

/// The broker does not know the topic or partition asked for.
fn is_gone(e: &rdkafka::error::KafkaError) -> bool {
    use rdkafka::types::RDKafkaErrorCode as C;
    matches!(
        e.rdkafka_error_code(),
        Some(C::UnknownPartition | C::UnknownTopicOrPartition | C::UnknownTopic)
    )
}

fn blocking_failed(e: tokio::task::JoinError) -> BackendError {
    BackendError::new(ErrorClass::Connection, e.to_string())
}

impl Reader {
    pub fn new(shared: &Shared, role: &str) -> Result<Reader, BackendError> {
        let client = format!("dbq-bench/{}/{role}", shared.namespace);
        let consumer: BaseConsumer = shared
            .config(&[
                ("client.id", &client),
                ("group.id", &shared.topics.group),
                ("enable.auto.commit", "false"),
                ("enable.auto.offset.store", "false"),
            ])
            .create()?;
        Ok(Reader {
            consumer: Arc::new(consumer),
            walked: HashMap::new(),
            progress: Progress::default(),
        })
    }

    /// The low and high watermarks of every partition of `topic`, and the group's
    /// committed offset (the low watermark where it has none).
    pub async fn marks(&self, topic: &str, partitions: i32) -> Result<Marks, BackendError> {
        let c = self.consumer.clone();
        let topic = topic.to_string();
        tokio::task::spawn_blocking(move || {
            let mut list = TopicPartitionList::new();
            let mut out = Vec::new();
            // A partition the broker no longer has (the topic deleted, or lost with the
            // broker's log) holds nothing: its jobs are missing, named by the proof. Asked
            // once: a watermark of an unknown partition is only refused at its timeout.
            let known = known_partitions(&c, &topic)?;
            for p in 0..partitions {
                if !known.contains(&p) {
                    out.push((p, 0, 0, 0));
                    continue;
                }
                let (low, high) = match c.fetch_watermarks(&topic, p, ANSWER_WITHIN) {
                    Err(e) if is_gone(&e) => (0, 0),
                    marks => marks?,
                };
                list.add_partition(&topic, p);
                out.push((p, low, high, low));
            }
            if list.count() == 0 {
                return Ok(out);
            }
            let committed = match c.committed_offsets(list, ANSWER_WITHIN) {
                Err(e) if is_gone(&e) => TopicPartitionList::new(),
                committed => committed?,
            };
            for e in committed.elements() {
                if let Offset::Offset(at) = e.offset() {
                    out[e.partition() as usize].3 = at.max(out[e.partition() as usize].1);
                }
            }
            Ok::<_, rdkafka::error::KafkaError>(out)
        })
        .await
        .map_err(blocking_failed)?
        .map_err(Into::into)
    }
}

impl Progress {
    /// Notes where each partition of `topic` stands now (its marks just read).
    pub fn note(&mut self, topic: &str, marks: &Marks, now: Instant) {
        for &(p, _, high, committed) in marks {
            let at = self
                .0
                .entry((topic.to_string(), p))
                .or_insert((committed, None));
            let waiting = high > committed;
            *at = match (*at, waiting) {
                (_, false) => (committed, None),
                ((was, Some(since)), true) if was == committed => (committed, Some(since)),
                (_, true) => (committed, Some(now)),
            };
        }
    }

    /// The partitions whose waiting records have not moved for at least `after`, by what
    /// [`Progress::note`] saw.
    pub fn stall(&self, after: Duration, now: Instant) -> Stall {
        let mut stall = Stall::default();
        for (_, since) in self.0.values() {
            let held = since.map_or(Duration::ZERO, |s| now.duration_since(s));
            if held >= after {
                stall.partitions += 1;
                stall.longest = stall.longest.max(held);
            }
        }
        stall
    }
}

impl Reader {
    /// Commits the start of every partition of `topics` for the workers' group, as a new
    /// queue's group starts anyway (from the earliest record). It makes the group known from
    /// the install on: Tansu 0.6.0 lists (ListGroups, which librdkafka asks before it
    /// describes a group) only groups that have committed offsets, so the wait for the group
    /// to form would otherwise see none until the first job was done.
    pub async fn register_group(
        &self,
        topics: &[&str],
        partitions: i32,
    ) -> Result<(), BackendError> {
        let c = self.consumer.clone();
        let mut list = TopicPartitionList::new();
        for topic in topics {
            for p in 0..partitions {
                list.add_partition_offset(topic, p, Offset::Offset(0))?;
            }
        }
        tokio::task::spawn_blocking(move || c.commit(&list, CommitMode::Sync))
            .await
            .map_err(blocking_failed)?
            .map_err(Into::into)
    }

    /// The workers' group as its coordinator describes it (DescribeGroups): settled when
    /// `Stable`, every member having been handed its part.
    pub async fn group(&self, group: &str) -> Result<GroupView, BackendError> {
        let c = self.consumer.clone();
        let group = group.to_string();
        tokio::task::spawn_blocking(move || {
            let list = c.fetch_group_list(Some(&group), ANSWER_WITHIN)?;
            Ok::<_, rdkafka::error::KafkaError>(
                match list.groups().iter().find(|g| g.name() == group) {
                    Some(g) => GroupView {
                        state: g.state().to_string(),
                        settled: g.state() == "Stable",
                        members: g.members().len(),
                    },
                    None => GroupView {
                        state: "Dead".into(),
                        settled: false,
                        members: 0,
                    },
                },
            )
        })
        .await
        .map_err(blocking_failed)?
        .map_err(Into::into)
    }

    /// Every record of `topic` from each partition's low to its high watermark, each
    /// marked committed when it lies below the group's committed offset. Only the records
    /// past what an earlier walk read are fetched.
    pub async fn walk(
        &mut self,
        topic: &str,
        stage: u8,
        marks: &Marks,
    ) -> Result<Vec<Record>, BackendError> {
        let c = self.consumer.clone();
        let mut seen = self.walked.remove(topic).unwrap_or_default();
        let (name, ahead) = (topic.to_string(), marks.clone());
        let (seen, read) = tokio::task::spawn_blocking(move || {
            let read = read_new(&c, &name, stage, &ahead, &mut seen);
            (seen, read)
        })
        .await
        .map_err(blocking_failed)?;
        let out = marks
            .iter()
            .filter_map(|(p, _, _, committed)| Some((seen.get(p)?, *committed)))
            .flat_map(|(w, committed)| {
                w.records.iter().map(move |r| Record {
                    committed: r.offset < committed,
                    ..r.clone()
                })
            })
            .collect();
        self.walked.insert(topic.to_string(), seen);
        read?;
        Ok(out)
    }
}

/// Reads each partition of `topic` from where `seen` ends (or its low watermark, if later:
/// records below it are gone) to its high watermark, adding to `seen`. What was read stays
/// in `seen` when the broker stops answering.
fn read_new(
    c: &BaseConsumer,
    topic: &str,
    stage: u8,
    marks: &Marks,
    seen: &mut HashMap<i32, Walked>,
) -> Result<(), BackendError> {
    let mut list = TopicPartitionList::new();
    let mut left = HashSet::new();
    for (p, low, high, _) in marks {
        let w = seen.entry(*p).or_default();
        if *high < w.next {
            // The partition ends before what was read: the broker lost its log (a restart
            // without storage, the topic made again). What was read is gone.
            *w = Walked::default();
        }
        w.records.retain(|r| r.offset >= *low);
        w.next = w.next.max(*low);
        if *high > w.next {
            list.add_partition_offset(topic, *p, Offset::Offset(w.next))?;
            left.insert(*p);
        }
    }
    if left.is_empty() {
        return Ok(());
    }
    c.assign(&list)?;
    let started = Instant::now();
    while !left.is_empty() && started.elapsed() < ANSWER_WITHIN {
        let Some(m) = c.poll(Duration::from_millis(200)) else {
            continue;
        };
        let m = m?.detach();
        let p = m.partition();
        let (_, _, high, _) = marks[p as usize];
        if m.offset() + 1 >= high {
            left.remove(&p);
        }
        let w = seen.entry(p).or_default();
        w.next = w.next.max(m.offset() + 1);
        // A record the harness did not write is kept, to be named.
        let d = describe(&m).ok();
        let key = crate::backend::broker::payload_key(m.payload().unwrap_or(b""))
            .unwrap_or_default()
            .to_string();
        w.records.push(Record {
            stage,
            retries: d.as_ref().map_or(0, |d| d.retries),
            partition: p,
            offset: m.offset(),
            committed: false,
            id: d.map_or(0, |d| d.id),
            key,
            foreign: foreign(&m),
        });
    }
    c.unassign()?;
    match left.is_empty() {
        true => Ok(()),
        false => Err(rdkafka::error::KafkaError::Global(
            rdkafka::types::RDKafkaErrorCode::OperationTimedOut,
        )
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partition_stalls_while_its_waiting_records_go_uncommitted() {
        let mut p = Progress::default();
        let t0 = Instant::now();
        let s = |n| t0 + Duration::from_secs(n);
        // Partition 0 waits at offset 5, partition 1 has nothing waiting.
        p.note("jobs", &vec![(0, 0, 9, 5), (1, 0, 4, 4)], s(0));
        p.note("jobs", &vec![(0, 0, 12, 5), (1, 0, 6, 4)], s(4));
        let stall = p.stall(Duration::from_secs(3), s(4));
        assert_eq!(
            stall,
            Stall {
                partitions: 1,
                longest: Duration::from_secs(4)
            }
        );
        // Partition 1's records wait from 4 s; partition 0 moves on at 6 s.
        p.note("jobs", &vec![(0, 0, 12, 7), (1, 0, 6, 4)], s(6));
        let stall = p.stall(Duration::from_secs(3), s(6));
        assert_eq!(stall, Stall::default(), "moving, and waiting only 2 s");
        p.note("jobs", &vec![(0, 0, 12, 12), (1, 0, 6, 4)], s(9));
        assert_eq!(p.stall(Duration::from_secs(3), s(9)).partitions, 1);
    }
}
