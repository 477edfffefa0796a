//! What the run's own connections read from a Kafka queue (the sampler, the proof): the
//! topics' watermarks, the group's committed offsets, and the records themselves, read from
//! the start of each partition by a consumer that belongs to no group (reading takes nothing
//! from the workers). A job's latest record decides how it stands: in the dead letters it is
//! dead-lettered; in the jobs' or retries' topic below its partition's committed offset it
//! ended done, at or above it is waiting. A job with no record left ended as the ledger says
//! when the ledger has it done (retention removes consumed records), and is `missing` (lost)
//! otherwise. The workers' group is read the same way: as its coordinator describes it.

use super::link::KafkaLink;
use super::provenance::sort_out;
use super::reader::{Marks, Reader, Record};
use crate::backend::broker::{mismatches, untracked};
use crate::backend::error::BackendError;
use crate::backend::figures::{DbSample, GroupView, TableStats};
use crate::backend::job::{JobId, JobStatus, Stranger, TableMismatch};
use crate::backend::seam::{Group, Inspect};
use async_trait::async_trait;
use std::collections::{HashMap, HashSet};
use std::time::Instant;

/// How long a partition's waiting records may go uncommitted before the sampler counts it
/// stalled: longer than a handler, a claim and a commit take together on a live member.
pub const STALL_AFTER: std::time::Duration = std::time::Duration::from_secs(3);

impl KafkaLink {
    fn reader(&mut self) -> Result<&mut Reader, BackendError> {
        if self.reader.is_none() {
            self.reader = Some(Reader::new(&self.shared, &self.role)?);
        }
        Ok(self.reader.as_mut().expect("just made"))
    }

    /// The marks of the jobs', retries' and dead letters' topics.
    async fn all_marks(&mut self) -> Result<[Marks; 3], BackendError> {
        let t = self.shared.topics.clone();
        let p = self.shared.partitions;
        let r = self.reader()?;
        let marks = [
            r.marks(&t.jobs, p).await?,
            r.marks(&t.retry, p).await?,
            r.marks(&t.dead, 1).await?,
        ];
        let now = Instant::now();
        r.progress.note(&t.jobs, &marks[0], now);
        r.progress.note(&t.retry, &marks[1], now);
        Ok(marks)
    }

    /// Every record of the queue's three topics: the harness's, and the strangers.
    pub(super) async fn sorted_records(
        &mut self,
    ) -> Result<(Vec<Record>, Vec<Stranger>), BackendError> {
        Ok(self.sorted_records_at().await?.0)
    }

    /// As [`KafkaLink::sorted_records`], with the jobs' topic's marks they were read at.
    pub(super) async fn sorted_records_at(
        &mut self,
    ) -> Result<((Vec<Record>, Vec<Stranger>), Marks), BackendError> {
        let [jobs, retry, dead] = self.all_marks().await?;
        let t = self.shared.topics.clone();
        let r = self.reader()?;
        let mut out = r.walk(&t.jobs, 0, &jobs).await?;
        out.extend(r.walk(&t.retry, 1, &retry).await?);
        out.extend(r.walk(&t.dead, 2, &dead).await?);
        Ok((sort_out(out, self.produced().as_ref(), &t), jobs))
    }

    /// How each job stands by its latest record, with its payload key.
    async fn broker_view(&mut self) -> Result<HashMap<JobId, (JobStatus, String)>, BackendError> {
        let mut latest: HashMap<JobId, Record> = HashMap::new();
        for r in self.sorted_records().await?.0 {
            let later = |old: &Record| {
                (r.stage, r.retries, r.offset) > (old.stage, old.retries, old.offset)
            };
            match latest.get(&r.id) {
                Some(old) if !later(old) => {}
                _ => {
                    latest.insert(r.id, r);
                }
            }
        }
        Ok(latest
            .into_iter()
            .map(|(id, r)| {
                let status = match (r.stage, r.committed) {
                    (2, _) => JobStatus::DeadLetter,
                    (_, true) => JobStatus::Done,
                    (_, false) => JobStatus::Pending,
                };
                (id, (status, r.key))
            })
            .collect())
    }

    /// (waiting or in flight in the jobs' and retries' topics, dead letters, records of the
    /// jobs' topic).
    async fn counts(&mut self) -> Result<(i64, i64, i64), BackendError> {
        let [jobs, retry, dead] = self.all_marks().await?;
        let lag = |m: &Marks| {
            m.iter()
                .map(|(_, _, high, committed)| high - committed)
                .sum::<i64>()
        };
        let held = |m: &Marks| m.iter().map(|(_, low, high, _)| high - low).sum::<i64>();
        Ok((lag(&jobs) + lag(&retry), held(&dead), held(&jobs)))
    }
}

#[async_trait]
impl Inspect for KafkaLink {
    async fn sample(&mut self, full: bool) -> Result<DbSample, BackendError> {
        let started = Instant::now();
        let (waiting, dead, records) = self.counts().await?;
        let stall = self.reader()?.progress.stall(STALL_AFTER, Instant::now());
        let server = [
            ("records", records),
            ("lag", waiting),
            ("dead_letters", dead),
            ("stalled_partitions", stall.partitions),
            ("stalled_for_ms", stall.longest.as_millis() as i64),
        ];
        Ok(DbSample {
            pending: waiting,
            dead_letter: full.then_some(dead),
            sample_ms: started.elapsed().as_secs_f64() * 1000.0,
            held: records,
            server: server.map(|(k, v)| (k.to_string(), v)).into(),
            ..DbSample::default()
        })
    }

    async fn table_stats(&mut self) -> Result<TableStats, BackendError> {
        let (_, _, records) = self.counts().await?;
        Ok(TableStats {
            live_tuples: records,
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
        let view = self.broker_view().await?;
        Ok(ids
            .iter()
            .filter_map(|id| view.get(id).map(|(s, _)| (*id, *s, None)))
            .collect())
    }

    async fn jobs_by_key(&mut self, keys: &[String]) -> Result<Vec<(JobId, String)>, BackendError> {
        let wanted: HashSet<&str> = keys.iter().map(String::as_str).collect();
        let view = self.broker_view().await?;
        Ok(view
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
        let view = self.broker_view().await?;
        Ok(mismatches(ids, expected, |id, expected| {
            match view.get(&id) {
                Some((s, _)) => s.as_str().to_string(),
                // No record left: it ended as the ledger says (retention may remove a consumed
                // record), unless the ledger has it unfinished: then no one ran it.
                None if expected == "done" => "done".to_string(),
                None => "missing".to_string(),
            }
        }))
    }

    async fn untracked_between(
        &mut self,
        known: &[JobId],
        from: JobId,
        to: JobId,
    ) -> Result<Vec<(JobId, String)>, BackendError> {
        let view = self.broker_view().await?;
        let held = view
            .into_iter()
            .map(|(id, (s, _))| (id, s.as_str().to_string()));
        Ok(untracked(held, known, from, to))
    }
}

#[async_trait]
impl Group for KafkaLink {
    async fn describe_group(&mut self) -> Result<GroupView, BackendError> {
        let group = self.shared.topics.group.clone();
        self.reader()?.group(&group).await
    }
}
