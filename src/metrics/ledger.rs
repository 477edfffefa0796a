//! The harness's own record of every job: committed by a producer (or prefill), claimed,
//! completed, failed, dead-lettered, reaped, lost with a crashing worker. It is one side of
//! the accounting proof; the table is the other.

use super::event::{Event, JobId};
use crate::backend::JobStatus;
use std::collections::{BTreeMap, BTreeSet, HashMap};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LedgerEntry {
    /// The insert committed (a producer saw it, prefill returned its id, or an in-doubt
    /// insert was found in the table).
    pub enqueued: bool,
    /// Claims that returned this job (attempts).
    pub claims: u32,
    /// `done` updates that committed.
    pub completions: u32,
    /// Failure updates that committed.
    pub failures: u32,
    pub dead_lettered: bool,
    /// Its last failure update dead-lettered it (so that failure led to no further claim).
    pub dead_lettered_by_failure: bool,
    /// Times the reaper returned this job to `pending`.
    pub reaps: u32,
    /// Of those, reaps counted as a failed attempt (`retry_count` + 1).
    pub counted_reaps: u32,
    /// Completions and failure updates of it that finished nothing (stale: the worker's
    /// claim had been reaped).
    pub stale: u32,
    /// Times a worker holding it crashed or was killed.
    pub crashes: u32,
    /// Times a worker's transaction holding it failed and rolled back.
    pub rollbacks: u32,
    /// Its last outcome is unknown to the harness (a worker died, or a commit broke) until
    /// the table resolves it.
    pub in_doubt: bool,
    /// Some outcome of it was ever in doubt: the last pass asks the table about it even when
    /// it finished later (a failure update whose reply was lost shows only in its
    /// `retry_count`).
    pub doubted: bool,
    /// It finished in the table without a worker reporting it (resolved in-doubt outcome).
    pub resolved_from_table: bool,
    /// The highest attempt number a library's worker reported starting (0: none reported).
    pub last_attempt: u32,
    /// Starts of an attempt already started (a library's worker reports its attempt
    /// number): runs repeated whatever their outcome, a failed repeat included.
    pub repeated_starts: u32,
}

impl LedgerEntry {
    pub fn finished(&self) -> bool {
        self.completions > 0 || self.dead_lettered
    }

    /// The final state the table should show: `done`, `dead_letter`, or `open`.
    pub fn expected_status(&self) -> &'static str {
        if self.completions > 0 {
            JobStatus::Done.as_str()
        } else if self.dead_lettered {
            JobStatus::DeadLetter.as_str()
        } else {
            "open"
        }
    }

    /// Claims beyond the first that a failure update does not explain: the job ran again
    /// because an earlier run was lost (crash, rollback, reap) or for no known reason. Each
    /// failure that sent the job back to `pending` explains one more claim; the one that
    /// dead-lettered it explains none, so a repeat before a dead letter is still counted.
    /// Where the worker reports the library's attempt numbers, a start of an attempt already
    /// started counts too (a repeat that failed sends no retry of its own).
    pub fn extra_executions(&self) -> u32 {
        let retried = self.failures - u32::from(self.dead_lettered_by_failure && self.failures > 0);
        self.claims
            .saturating_sub(1 + retried)
            .max(self.repeated_starts)
    }

    /// Extra executions that no crash, rollback or reap explains.
    pub fn unexplained_executions(&self) -> u32 {
        self.extra_executions()
            .saturating_sub(self.crashes + self.rollbacks + self.reaps)
    }
}

/// Ids per page of the compact stores: job ids are mostly dense (a sequence), so a page
/// holds a run of them and a run's memory is about one byte (ledger) or bit (id set) a job.
const PAGE: i64 = 4096;

/// A job on the common path fits one byte: enqueued, claimed once, completed once.
const ENQUEUED: u8 = 1;
const CLAIMED: u8 = 2;
const COMPLETED: u8 = 4;
/// A library's worker reported starting it as attempt 1.
const FIRST_ATTEMPT: u8 = 8;
/// Anything else (failures, retries, crashes, doubt) is kept whole in `unusual`.
const UNUSUAL: u8 = 0xFF;

impl LedgerEntry {
    /// The entry as one byte, when it is on the common path.
    fn to_byte(self) -> Option<u8> {
        let common = LedgerEntry {
            enqueued: self.enqueued,
            claims: self.claims.min(1),
            completions: self.completions.min(1),
            last_attempt: self.last_attempt.min(1),
            ..LedgerEntry::default()
        };
        (self == common).then_some(
            (u8::from(self.enqueued) * ENQUEUED)
                | (u8::from(self.claims == 1) * CLAIMED)
                | (u8::from(self.completions == 1) * COMPLETED)
                | (u8::from(self.last_attempt == 1) * FIRST_ATTEMPT),
        )
    }

    fn from_byte(b: u8) -> LedgerEntry {
        LedgerEntry {
            enqueued: b & ENQUEUED != 0,
            claims: u32::from(b & CLAIMED != 0),
            completions: u32::from(b & COMPLETED != 0),
            last_attempt: u32::from(b & FIRST_ATTEMPT != 0),
            ..LedgerEntry::default()
        }
    }
}

/// The ledger in about one byte a job: pages of bytes for jobs on the common path, whole
/// entries for the few that are not.
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    pages: BTreeMap<i64, Box<[u8]>>,
    unusual: HashMap<JobId, LedgerEntry>,
    outstanding: i64,
    /// Keys of inserts whose commit outcome is not known yet.
    in_doubt_keys: BTreeSet<String>,
    /// In-doubt inserts, in all: resolved as committed, and found never committed.
    pub in_doubt_enqueues: u64,
    pub in_doubt_committed: u64,
    /// Failure updates whose commit the worker could not confirm, found committed.
    pub failures_found_in_table: u64,
    /// Keys of outbox jobs whose business transaction rolled back.
    pub rolled_back_keys: Vec<String>,
}

impl Ledger {
    fn byte(&self, id: JobId) -> u8 {
        self.pages
            .get(&id.div_euclid(PAGE))
            .map_or(0, |p| p[id.rem_euclid(PAGE) as usize])
    }

    fn entry(&self, id: JobId, byte: u8) -> LedgerEntry {
        match byte {
            UNUSUAL => self.unusual[&id],
            b => LedgerEntry::from_byte(b),
        }
    }

    fn update(&mut self, id: JobId, f: impl FnOnce(&mut LedgerEntry)) {
        let byte = self.byte(id);
        let mut e = self.entry(id, byte);
        let before = e.enqueued && !e.finished();
        f(&mut e);
        let after = e.enqueued && !e.finished();
        self.outstanding += after as i64 - before as i64;
        let new = match e.to_byte() {
            Some(b) => {
                if byte == UNUSUAL {
                    self.unusual.remove(&id);
                }
                b
            }
            None => {
                self.unusual.insert(id, e);
                UNUSUAL
            }
        };
        let page = self
            .pages
            .entry(id.div_euclid(PAGE))
            .or_insert_with(|| vec![0; PAGE as usize].into_boxed_slice());
        page[id.rem_euclid(PAGE) as usize] = new;
    }

    /// Every job the ledger has heard of, in id order.
    fn entries(&self) -> impl Iterator<Item = (JobId, LedgerEntry)> + '_ {
        self.pages.iter().flat_map(move |(page, bytes)| {
            bytes
                .iter()
                .enumerate()
                .filter(|(_, b)| **b != 0)
                .map(move |(i, b)| {
                    let id = page * PAGE + i as i64;
                    (id, self.entry(id, *b))
                })
        })
    }

    pub fn enqueued(&mut self, id: JobId) {
        self.update(id, |e| e.enqueued = true);
    }
    /// A run started; `attempt`: the library's number for it, when its worker reports one.
    pub fn claimed(&mut self, id: JobId, attempt: Option<u32>) {
        self.update(id, |e| {
            e.claims += 1;
            match attempt {
                Some(a) if a <= e.last_attempt => e.repeated_starts += 1,
                Some(a) => e.last_attempt = a,
                None => {}
            }
        });
    }
    pub fn completed(&mut self, id: JobId) {
        self.update(id, |e| {
            e.completions += 1;
            e.in_doubt = false;
        });
    }
    pub fn failed(&mut self, id: JobId, dead_lettered: bool) {
        self.update(id, |e| {
            e.failures += 1;
            e.dead_lettered |= dead_lettered;
            e.dead_lettered_by_failure |= dead_lettered;
            e.in_doubt = false;
        });
    }
    /// A worker's completion or failure update of it finished nothing.
    pub fn stale(&mut self, id: JobId) {
        self.update(id, |e| e.stale += 1);
    }
    pub fn reaped(&mut self, id: JobId, dead_lettered: bool, counted: bool) {
        self.update(id, |e| {
            e.reaps += 1;
            e.counted_reaps += u32::from(counted);
            e.dead_lettered |= dead_lettered;
        });
    }
    pub fn crashed(&mut self, id: JobId) {
        self.update(id, |e| {
            e.crashes += 1;
            e.in_doubt = true;
            e.doubted = true;
        });
    }
    /// Its worker reported its outcome and died soon after: the library may not have
    /// recorded it, and may run the job again (the last pass asks the table how it ended).
    pub fn crashed_after_report(&mut self, id: JobId) {
        self.update(id, |e| {
            e.crashes += 1;
            e.doubted = true;
        });
    }
    pub fn rolled_back(&mut self, id: JobId, in_doubt: bool) {
        self.update(id, |e| {
            e.rollbacks += 1;
            e.in_doubt |= in_doubt;
            e.doubted |= in_doubt;
        });
    }

    /// The harness died (its journal replayed by `prove`): it cannot have heard how any job
    /// it had not seen finish ended, so each is in doubt until the table says.
    pub fn harness_died(&mut self) {
        let open: Vec<JobId> = self
            .committed()
            .filter(|(_, e)| !e.finished())
            .map(|(id, _)| id)
            .collect();
        for id in open {
            self.update(id, |e| {
                e.in_doubt = true;
                e.doubted = true;
            });
        }
    }

    /// The table showed how an in-doubt job stands. A `retry_count` above the failed
    /// attempts the ledger knows of (failure updates and counted reaps) means failure updates
    /// committed though their workers could not tell: they are counted as failures, not as
    /// the rollbacks they were taken for. Returns how many were found.
    pub fn resolved(&mut self, id: JobId, status: JobStatus, retry_count: Option<i32>) -> u32 {
        let mut found = 0;
        self.update(id, |e| {
            let known = e.failures + e.counted_reaps;
            if let Some(committed) = retry_count.and_then(|r| u32::try_from(r).ok())
                && committed > known
            {
                found = committed - known;
                e.failures += found;
                e.rollbacks = e.rollbacks.saturating_sub(found);
                e.dead_lettered_by_failure |= status == JobStatus::DeadLetter;
            }
            // Finished in the table without a report: still queued or in flight is not.
            if !e.finished() && status.is_final() {
                e.resolved_from_table = true;
                match status {
                    JobStatus::Done => e.completions += 1,
                    _ => e.dead_lettered = true,
                }
            }
            e.in_doubt = false;
        });
        self.failures_found_in_table += u64::from(found);
        found
    }

    /// Applies what the table said about in-doubt outcomes (`Resolved`, `InsertFound`,
    /// `NeverCommitted`);
    /// other events are ignored.
    pub fn settle(&mut self, event: &Event) {
        match event {
            Event::InsertFound { job, key, .. } => self.enqueue_resolved(key, *job),
            Event::Resolved {
                job,
                status,
                retry_count,
                ..
            } => {
                self.resolved(*job, *status, *retry_count);
            }
            Event::NeverCommitted { keys } => self.never_committed(keys),
            _ => {}
        }
    }

    pub fn enqueue_in_doubt(&mut self, key: String) {
        self.in_doubt_enqueues += 1;
        self.in_doubt_keys.insert(key);
    }

    /// An in-doubt insert was found in the table: it committed.
    pub fn enqueue_resolved(&mut self, key: &str, id: JobId) {
        if self.in_doubt_keys.remove(key) {
            self.in_doubt_committed += 1;
            self.enqueued(id);
        }
    }

    pub fn never_committed(&mut self, keys: &[String]) {
        for k in keys {
            self.in_doubt_keys.remove(k);
        }
    }

    /// Committed jobs not yet finished.
    pub fn outstanding(&self) -> i64 {
        self.outstanding
    }

    /// What still needs the table to settle: in-doubt insert keys, and open in-doubt jobs.
    pub fn unresolved(&self) -> (Vec<String>, Vec<JobId>) {
        let keys = self.in_doubt_keys.iter().cloned().collect();
        let mut jobs: Vec<JobId> = self
            .unusual
            .iter()
            .filter(|(_, e)| e.in_doubt && !e.finished())
            .map(|(id, _)| *id)
            .collect();
        jobs.sort_unstable();
        (keys, jobs)
    }

    /// Finished jobs some outcome of which was in doubt: the last pass asks the table about
    /// them too (see [`LedgerEntry::doubted`]).
    pub fn doubted_finished(&self) -> Vec<JobId> {
        let mut jobs: Vec<JobId> = self
            .unusual
            .iter()
            .filter(|(_, e)| e.doubted && e.finished())
            .map(|(id, _)| *id)
            .collect();
        jobs.sort_unstable();
        jobs
    }

    pub fn get(&self, id: JobId) -> Option<LedgerEntry> {
        match self.byte(id) {
            0 => None,
            b => Some(self.entry(id, b)),
        }
    }

    /// Committed jobs with their entries, in id order.
    pub fn committed(&self) -> impl Iterator<Item = (JobId, LedgerEntry)> + '_ {
        self.entries().filter(|(_, e)| e.enqueued)
    }

    /// How many committed jobs were claimed once, twice, …
    pub fn attempts_histogram(&self) -> BTreeMap<u32, u64> {
        let mut h = BTreeMap::new();
        for (_, e) in self.committed() {
            *h.entry(e.claims).or_insert(0) += 1;
        }
        h
    }
}

/// A set of job ids in about one bit a job (pages of bits).
#[derive(Debug, Clone, Default)]
pub struct IdSet {
    pages: BTreeMap<i64, Box<[u64]>>,
}

impl IdSet {
    pub fn insert(&mut self, id: JobId) {
        let page = self
            .pages
            .entry(id.div_euclid(PAGE))
            .or_insert_with(|| vec![0; (PAGE / 64) as usize].into_boxed_slice());
        let bit = id.rem_euclid(PAGE);
        page[(bit / 64) as usize] |= 1 << (bit % 64);
    }

    pub fn contains(&self, id: JobId) -> bool {
        let bit = id.rem_euclid(PAGE);
        self.pages
            .get(&id.div_euclid(PAGE))
            .is_some_and(|p| p[(bit / 64) as usize] & (1 << (bit % 64)) != 0)
    }

    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// The ids in order.
    pub fn iter(&self) -> impl Iterator<Item = JobId> + '_ {
        self.pages.iter().flat_map(|(page, words)| {
            words.iter().enumerate().flat_map(move |(w, word)| {
                (0..64)
                    .filter(move |b| word & (1 << b) != 0)
                    .map(move |b| page * PAGE + w as i64 * 64 + b)
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outstanding_follows_events_in_any_order() {
        let mut l = Ledger::default();
        l.enqueued(1);
        l.enqueued(2);
        assert_eq!(l.outstanding(), 2);
        // A completion can be processed before its enqueue event.
        l.completed(3);
        l.enqueued(3);
        assert_eq!(l.outstanding(), 2);
        l.claimed(1, None);
        l.failed(1, false);
        assert_eq!(l.outstanding(), 2);
        l.failed(1, true);
        l.completed(2);
        assert_eq!(l.outstanding(), 0);
        assert_eq!(l.get(1).unwrap().expected_status(), "dead_letter");
        assert_eq!(l.committed().count(), 3);
    }

    #[test]
    fn in_doubt_jobs_and_inserts_are_settled_by_the_table() {
        let mut l = Ledger::default();
        l.enqueued(1);
        l.claimed(1, None);
        l.crashed(1);
        assert_eq!(l.unresolved().1, vec![1]);
        // Claimed again after the crash: one extra execution, explained by the crash.
        l.claimed(1, None);
        assert_eq!(l.get(1).unwrap().extra_executions(), 1);
        assert_eq!(l.get(1).unwrap().unexplained_executions(), 0);
        l.resolved(1, JobStatus::Done, Some(0));
        assert!(l.get(1).unwrap().resolved_from_table);
        assert_eq!(l.outstanding(), 0);

        l.enqueue_in_doubt("k1".into());
        l.enqueue_in_doubt("k2".into());
        l.enqueue_resolved("k1", 7);
        l.never_committed(&["k2".into()]);
        assert_eq!(l.unresolved(), (vec![], vec![]));
        assert_eq!((l.in_doubt_enqueues, l.in_doubt_committed), (2, 1));
        assert_eq!(l.outstanding(), 1);
    }

    #[test]
    fn common_jobs_take_a_byte_and_unusual_ones_are_kept_whole() {
        let mut l = Ledger::default();
        for id in [-5, 0, 1, 4095, 4096, 1 << 40] {
            l.enqueued(id);
            l.claimed(id, None);
        }
        l.completed(1);
        l.failed(4096, false);
        l.claimed(4096, None);
        l.completed(4096);
        assert_eq!(l.unusual.len(), 1, "only the retried job is unusual");
        let e = l.get(4096).unwrap();
        assert_eq!((e.claims, e.failures, e.completions), (2, 1, 1));
        assert_eq!(l.get(1).unwrap().expected_status(), "done");
        assert_eq!(l.get(2), None);
        let ids: Vec<JobId> = l.committed().map(|(id, _)| id).collect();
        assert_eq!(ids, [-5, 0, 1, 4095, 4096, 1 << 40]);
        assert_eq!(l.outstanding(), 4);
        assert_eq!(l.attempts_histogram(), BTreeMap::from([(1, 5), (2, 1)]));

        let mut set = IdSet::default();
        for id in [9000, 3, -1, 4096 * 3 + 63, 4096 * 3 + 64] {
            set.insert(id);
        }
        assert!(set.contains(3) && !set.contains(4) && set.contains(-1));
        let ids: Vec<JobId> = set.iter().collect();
        assert_eq!(ids, [-1, 3, 9000, 4096 * 3 + 63, 4096 * 3 + 64]);
    }

    /// Crash, retry, dead letter: the first run was lost and repeated, though two failure
    /// updates committed; the dead-lettering one explains no further claim.
    #[test]
    fn a_repeat_before_a_dead_letter_is_counted() {
        let mut l = Ledger::default();
        l.enqueued(1);
        l.claimed(1, None);
        l.crashed(1);
        l.claimed(1, None);
        l.failed(1, false);
        l.claimed(1, None);
        l.failed(1, true);
        let e = l.get(1).unwrap();
        assert_eq!(e.extra_executions(), 1);
        assert_eq!(e.unexplained_executions(), 0);
        // Two failures, no crash: nothing was repeated.
        let mut l = Ledger::default();
        l.enqueued(2);
        l.claimed(2, None);
        l.failed(2, false);
        l.claimed(2, None);
        l.failed(2, true);
        assert_eq!(l.get(2).unwrap().extra_executions(), 0);
    }

    /// A library's worker started attempt 1 twice, both runs failed, attempt 2 succeeded:
    /// the failures explain no repeat (each sends a retry), the attempt numbers do. A job
    /// on the common path with attempt numbers still fits one byte.
    #[test]
    fn a_failed_repeat_of_one_attempt_is_counted() {
        let mut l = Ledger::default();
        l.enqueued(1);
        l.claimed(1, Some(1));
        l.claimed(1, Some(1));
        l.failed(1, false);
        l.failed(1, false);
        l.claimed(1, Some(2));
        l.completed(1);
        let e = l.get(1).unwrap();
        assert_eq!((e.claims, e.repeated_starts), (3, 1));
        assert_eq!((e.extra_executions(), e.unexplained_executions()), (1, 1));
        l.enqueued(2);
        l.claimed(2, Some(1));
        l.completed(2);
        assert!(!l.unusual.contains_key(&2), "one byte on the common path");
        l.claimed(2, Some(1));
        assert_eq!(l.get(2).unwrap().extra_executions(), 1);
    }

    /// A failure update whose commit reply was lost was taken for a rollback; the table's
    /// retry_count shows it committed (a counted reap is not mistaken for one).
    #[test]
    fn a_failure_whose_commit_was_in_doubt_is_settled_by_retry_count() {
        let mut l = Ledger::default();
        l.enqueued(1);
        l.claimed(1, None);
        l.reaped(1, false, true);
        l.claimed(1, None);
        l.rolled_back(1, true);
        assert_eq!(l.resolved(1, JobStatus::Pending, Some(2)), 1);
        let e = l.get(1).unwrap();
        assert_eq!((e.failures, e.rollbacks, e.in_doubt), (1, 0, false));
        assert_eq!(l.failures_found_in_table, 1);
        // The same in doubt, but the table shows nothing new: a rollback it was.
        l.claimed(1, None);
        l.rolled_back(1, true);
        assert_eq!(l.resolved(1, JobStatus::Pending, Some(2)), 0);
        assert_eq!(l.get(1).unwrap().rollbacks, 1);
        // No row to read (a deleted job): nothing settled by count.
        assert_eq!(l.resolved(1, JobStatus::Done, None), 0);
        assert!(l.get(1).unwrap().finished());
    }
}
