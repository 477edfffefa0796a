//! Where a Kafka queue's records came from. Anyone with access may write into the run's
//! topics, in the harness's own shape if they like, so the proof cannot take a record's
//! headers on trust: the runner notes where the broker put each job's record (its delivery
//! report: partition and offset), and a record of the jobs' topic that is not at the place
//! noted for its job is not the harness's. Foreign records (no job id, a payload that is not
//! a job's) are named too. A stranger is set apart from the jobs' records, so that a forged
//! copy of a finished job does not make that job look unfinished, and the proof names it.

use super::Topics;
use super::link::KafkaLink;
use super::reader::{Marks, Record};
use super::record::place;
use crate::backend::error::BackendError;
use crate::backend::job::{JobId, Loss, Stranger};
use crate::backend::seam::Provenance;
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::Ordering;

/// Where the broker put each job's record, by job id (ids are dense from 1): the partition
/// in the top 16 bits and the offset in the rest, 0 for none (8 bytes a job).
#[derive(Default)]
pub struct Delivered {
    at: Mutex<Vec<u64>>,
}

impl Delivered {
    pub fn note(&self, id: JobId, partition: i32, offset: i64) {
        let Ok(i) = usize::try_from(id - 1) else {
            return;
        };
        let mut at = self.at.lock().unwrap_or_else(|e| e.into_inner());
        if at.len() <= i {
            at.resize(i + 1, 0);
        }
        at[i] = ((partition as u64) << 48) | (offset as u64 + 1);
    }

    /// Where the job's record lies, if the runner heard.
    pub fn get(&self, id: JobId) -> Option<(i32, i64)> {
        let i = usize::try_from(id - 1).ok()?;
        let at = self.at.lock().unwrap_or_else(|e| e.into_inner());
        let v = *at.get(i).filter(|v| **v != 0)?;
        Some(((v >> 48) as i32, (v & ((1 << 48) - 1)) as i64 - 1))
    }
}

/// What the runner knows of what it produced: the ids it gave out and where each record
/// went. `None` where the queue was attached to (a worker process, `prove DIR`).
pub struct Produced<'a> {
    pub given_out: JobId,
    pub delivered: &'a Delivered,
}

/// Sets apart the records the harness did not produce: foreign ones, and in the jobs'
/// topic (stage 0) a record of a job that is not where its delivery report put it, or of
/// an id never given out. Without the runner's notes, a second record of one job in the
/// jobs' topic is the stranger (the harness writes one).
pub fn sort_out(
    records: Vec<Record>,
    produced: Option<&Produced>,
    topics: &Topics,
) -> (Vec<Record>, Vec<Stranger>) {
    let mut firsts: HashMap<JobId, (i32, i64)> = HashMap::new();
    let mut kept = Vec::with_capacity(records.len());
    let mut strangers = Vec::new();
    for r in records {
        let why = match (&r.foreign, r.stage, produced) {
            (Some(why), _, _) => Some(why.clone()),
            (None, 0, Some(p)) => forged(&r, p),
            (None, 0, None) => match firsts.get(&r.id) {
                Some(&(partition, offset)) => Some(format!(
                    "a second record of job {} (the first: partition {partition} offset {offset}); the harness writes one",
                    r.id
                )),
                None => {
                    firsts.insert(r.id, (r.partition, r.offset));
                    None
                }
            },
            _ => None,
        };
        match why {
            Some(why) => strangers.push(Stranger {
                place: place(topics.of_stage(r.stage), r.partition, r.offset),
                job: (r.id != 0).then_some(r.id),
                why,
            }),
            None => kept.push(r),
        }
    }
    (kept, strangers)
}

/// Why a record of the jobs' topic is not the one the runner produced for its job.
fn forged(r: &Record, p: &Produced) -> Option<String> {
    if r.id > p.given_out || r.id < 1 {
        return Some(format!("job {}: an id the harness never gave out", r.id));
    }
    match p.delivered.get(r.id) {
        Some(at) if at != (r.partition, r.offset) => Some(format!(
            "a copy of job {}, whose record the broker acknowledged at partition {} offset {}",
            r.id, at.0, at.1
        )),
        // Where the runner never heard (an insert in doubt), the record may be its own.
        _ => None,
    }
}

impl KafkaLink {
    /// The runner's notes, where this link's queue was installed by this process.
    pub(super) fn produced(&self) -> Option<Produced<'_>> {
        self.shared.installed.then(|| Produced {
            given_out: self.shared.next_id.load(Ordering::Relaxed),
            delivered: &self.shared.delivered,
        })
    }
}

/// Where a lost job's record went: still where the broker acknowledged it (then a commit of
/// the group passed it, or it waits), or gone from the broker, which then lost it.
fn loss(job: JobId, (p, o): (i32, i64), held: Option<&Record>, jobs: &Marks, topic: &str) -> Loss {
    let at = place(topic, p, o);
    if let Some(r) = held.filter(|r| (r.partition, r.offset) == (p, o)) {
        let why = match r.committed {
            true => format!(
                "its record is still at {at}, below the group's committed offset: a commit passed it unprocessed"
            ),
            false => format!("its record is still at {at}, waiting"),
        };
        return Loss {
            job,
            by_queue: false,
            why,
        };
    }
    let (low, high) = jobs
        .iter()
        .find(|m| m.0 == p)
        .map_or((0, 0), |m| (m.1, m.2));
    let now = if o >= high {
        format!("the partition now ends at offset {high}")
    } else if o < low {
        format!("the partition now starts at offset {low}")
    } else {
        "another record is there now".to_string()
    };
    Loss {
        job,
        by_queue: true,
        why: format!("the broker acknowledged its record at {at} and no longer holds it ({now})"),
    }
}

#[async_trait]
impl Provenance for KafkaLink {
    async fn strangers(&mut self) -> Result<Vec<Stranger>, BackendError> {
        Ok(self.sorted_records().await?.1)
    }

    /// Only for jobs whose delivery report this process heard (not after `prove DIR`).
    async fn losses(&mut self, lost: &[JobId]) -> Result<Vec<Loss>, BackendError> {
        let shared = self.shared.clone();
        if !shared.installed || lost.is_empty() {
            return Ok(Vec::new());
        }
        let ((records, _), jobs) = self.sorted_records_at().await?;
        let held: HashMap<JobId, &Record> = records
            .iter()
            .filter(|r| r.stage == 0)
            .map(|r| (r.id, r))
            .collect();
        let topic = &shared.topics.jobs;
        Ok(lost
            .iter()
            .filter_map(|&id| {
                let at = shared.delivered.get(id)?;
                Some(loss(id, at, held.get(&id).copied(), &jobs, topic))
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(stage: u8, id: JobId, partition: i32, offset: i64) -> Record {
        Record {
            stage,
            retries: 0,
            partition,
            offset,
            committed: true,
            id,
            key: String::new(),
            foreign: None,
        }
    }

    #[test]
    fn delivered_places_round_trip_and_unknown_ids_have_none() {
        let d = Delivered::default();
        d.note(3, 7, 0);
        d.note(1, 0, 123_456_789);
        assert_eq!(d.get(3), Some((7, 0)));
        assert_eq!(d.get(1), Some((0, 123_456_789)));
        assert_eq!(d.get(2), None);
        assert_eq!(d.get(4), None);
        assert_eq!(d.get(0), None);
    }

    #[test]
    fn a_copy_elsewhere_and_an_id_never_given_out_are_strangers_and_the_original_is_kept() {
        let d = Delivered::default();
        d.note(5, 0, 10);
        let p = Produced {
            given_out: 6,
            delivered: &d,
        };
        let records = vec![
            record(0, 5, 0, 10),
            record(0, 5, 1, 3),
            record(0, 9, 1, 4),
            record(0, 6, 1, 5),
            record(1, 5, 0, 0),
        ];
        let (kept, strangers) = sort_out(records, Some(&p), &Topics::new("ns"));
        assert_eq!(kept.len(), 3, "the original, the in-doubt 6 and the retry");
        assert_eq!(strangers.len(), 2);
        assert_eq!(strangers[0].place, "ns.jobs partition 1 offset 3");
        assert!(strangers[0].why.contains("partition 0 offset 10"));
        assert!(strangers[1].why.contains("never gave out"));
    }

    #[test]
    fn a_record_gone_from_where_the_broker_put_it_is_the_brokers_loss() {
        let jobs: Marks = vec![(0, 0, 4, 0), (1, 10, 20, 12)];
        let held = record(0, 7, 1, 12);
        let mut waiting = held.clone();
        waiting.committed = false;
        let l = |at, held| loss(7, at, held, &jobs, "ns.jobs");
        let past = l((0, 9), None);
        assert!(past.by_queue, "{past:?}");
        assert!(
            past.why.contains("ns.jobs partition 0 offset 9")
                && past.why.contains("now ends at offset 4"),
            "{past:?}"
        );
        assert!(l((1, 3), None).why.contains("now starts at offset 10"));
        assert!(l((1, 15), None).why.contains("another record"));
        assert!(l((1, 15), Some(&held)).by_queue, "its record is elsewhere");
        let passed = l((1, 12), Some(&held));
        assert!(
            !passed.by_queue && passed.why.contains("a commit passed it"),
            "{passed:?}"
        );
        assert!(l((1, 12), Some(&waiting)).why.contains("waiting"));
    }

    #[test]
    fn without_the_runners_notes_a_second_record_of_a_job_is_the_stranger() {
        let mut foreign = record(0, 0, 2, 2);
        foreign.foreign = Some("no id".into());
        let records = vec![record(0, 5, 0, 10), record(0, 5, 1, 3), foreign];
        let (kept, strangers) = sort_out(records, None, &Topics::new("ns"));
        assert_eq!(kept.len(), 1);
        assert_eq!(strangers.len(), 2);
        assert_eq!(strangers[0].job, Some(5));
        assert_eq!(strangers[1].job, None);
    }
}
