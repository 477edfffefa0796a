//! The harness's own record of every job: committed by a producer (or prefill), claimed,
//! completed, failed, dead-lettered, reaped, lost with a crashing worker. It is one side of
//! the accounting proof; the table is the other.

use super::event::{Event, JobId};
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
    /// Times the reaper returned this job to `pending`.
    pub reaps: u32,
    /// Times a worker holding it crashed or was killed.
    pub crashes: u32,
    /// Times a worker's transaction holding it failed and rolled back.
    pub rollbacks: u32,
    /// Its last outcome is unknown to the harness (a worker died, or a commit broke) until
    /// the table resolves it.
    pub in_doubt: bool,
    /// It finished in the table without a worker reporting it (resolved in-doubt outcome).
    pub resolved_from_table: bool,
}

impl LedgerEntry {
    pub fn finished(&self) -> bool {
        self.completions > 0 || self.dead_lettered
    }

    /// The final state the table should show: `done`, `dead_letter`, or `open`.
    pub fn expected_status(&self) -> &'static str {
        if self.completions > 0 {
            "done"
        } else if self.dead_lettered {
            "dead_letter"
        } else {
            "open"
        }
    }

    /// Claims beyond the first that a failure update does not explain: the job ran again
    /// because an earlier run was lost (crash, rollback, reap) or for no known reason.
    pub fn extra_executions(&self) -> u32 {
        self.claims.saturating_sub(1 + self.failures)
    }

    /// Extra executions that no crash, rollback or reap explains.
    pub fn unexplained_executions(&self) -> u32 {
        self.extra_executions()
            .saturating_sub(self.crashes + self.rollbacks + self.reaps)
    }
}

#[derive(Debug, Clone, Default)]
pub struct Ledger {
    entries: HashMap<JobId, LedgerEntry>,
    outstanding: i64,
    /// Keys of inserts whose commit outcome is not known yet.
    in_doubt_keys: BTreeSet<String>,
    /// In-doubt inserts, in all: resolved as committed, and found never committed.
    pub in_doubt_enqueues: u64,
    pub in_doubt_committed: u64,
    /// Keys of outbox jobs whose business transaction rolled back.
    pub rolled_back_keys: Vec<String>,
}

impl Ledger {
    fn update(&mut self, id: JobId, f: impl FnOnce(&mut LedgerEntry)) {
        let e = self.entries.entry(id).or_default();
        let before = e.enqueued && !e.finished();
        f(e);
        let after = e.enqueued && !e.finished();
        self.outstanding += after as i64 - before as i64;
    }

    pub fn enqueued(&mut self, id: JobId) {
        self.update(id, |e| e.enqueued = true);
    }
    pub fn claimed(&mut self, id: JobId) {
        self.update(id, |e| e.claims += 1);
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
            e.in_doubt = false;
        });
    }
    pub fn reaped(&mut self, id: JobId, dead_lettered: bool) {
        self.update(id, |e| {
            e.reaps += 1;
            e.dead_lettered |= dead_lettered;
        });
    }
    pub fn crashed(&mut self, id: JobId) {
        self.update(id, |e| {
            e.crashes += 1;
            e.in_doubt = true;
        });
    }
    pub fn rolled_back(&mut self, id: JobId, in_doubt: bool) {
        self.update(id, |e| {
            e.rollbacks += 1;
            e.in_doubt |= in_doubt;
        });
    }

    /// The table showed how an in-doubt job ended.
    pub fn resolved(&mut self, id: JobId, status: &str) {
        self.update(id, |e| {
            if !e.finished() {
                e.resolved_from_table = true;
                match status {
                    "done" => e.completions += 1,
                    "dead_letter" => e.dead_lettered = true,
                    _ => {}
                }
            }
            e.in_doubt = false;
        });
    }

    /// Applies what the table said about in-doubt outcomes (`Resolved`, `NeverCommitted`);
    /// other events are ignored.
    pub fn settle(&mut self, event: &Event) {
        match event {
            Event::Resolved {
                job, key: Some(k), ..
            } => self.enqueue_resolved(k, *job),
            Event::Resolved {
                job,
                status,
                key: None,
                ..
            } => self.resolved(*job, status),
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
            .entries
            .iter()
            .filter(|(_, e)| e.in_doubt && !e.finished())
            .map(|(id, _)| *id)
            .collect();
        jobs.sort_unstable();
        (keys, jobs)
    }

    pub fn get(&self, id: JobId) -> Option<&LedgerEntry> {
        self.entries.get(&id)
    }

    /// Committed jobs with their entries, in id order.
    pub fn committed(&self) -> Vec<(JobId, LedgerEntry)> {
        let mut v: Vec<_> = self
            .entries
            .iter()
            .filter(|(_, e)| e.enqueued)
            .map(|(id, e)| (*id, *e))
            .collect();
        v.sort_unstable_by_key(|(id, _)| *id);
        v
    }

    /// How many committed jobs were claimed once, twice, …
    pub fn attempts_histogram(&self) -> BTreeMap<u32, u64> {
        let mut h = BTreeMap::new();
        for e in self.entries.values().filter(|e| e.enqueued) {
            *h.entry(e.claims).or_insert(0) += 1;
        }
        h
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
        l.claimed(1);
        l.failed(1, false);
        assert_eq!(l.outstanding(), 2);
        l.failed(1, true);
        l.completed(2);
        assert_eq!(l.outstanding(), 0);
        assert_eq!(l.get(1).unwrap().expected_status(), "dead_letter");
        assert_eq!(l.committed().len(), 3);
    }

    #[test]
    fn in_doubt_jobs_and_inserts_are_settled_by_the_table() {
        let mut l = Ledger::default();
        l.enqueued(1);
        l.claimed(1);
        l.crashed(1);
        assert_eq!(l.unresolved().1, vec![1]);
        // Claimed again after the crash: one extra execution, explained by the crash.
        l.claimed(1);
        assert_eq!(l.get(1).unwrap().extra_executions(), 1);
        assert_eq!(l.get(1).unwrap().unexplained_executions(), 0);
        l.resolved(1, "done");
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
}
