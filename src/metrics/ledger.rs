//! The harness's own record of every job: committed by a producer (or prefill), claimed,
//! completed, failed, dead-lettered. It is one side of the accounting proof; the table is
//! the other.

use super::event::JobId;
use std::collections::HashMap;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LedgerEntry {
    /// The insert committed (a producer saw it, or prefill returned its id).
    pub enqueued: bool,
    /// Claims that returned this job (attempts).
    pub claims: u32,
    /// `done` updates that committed.
    pub completions: u32,
    /// Times the reaper returned this job to `pending`.
    pub reaps: u32,
    /// Failure updates that committed.
    pub failures: u32,
    pub dead_lettered: bool,
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
}

#[derive(Debug, Clone, Default)]
pub struct Ledger {
    entries: HashMap<JobId, LedgerEntry>,
    outstanding: i64,
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
    pub fn reaped(&mut self, id: JobId) {
        self.update(id, |e| e.reaps += 1);
    }
    pub fn completed(&mut self, id: JobId) {
        self.update(id, |e| e.completions += 1);
    }
    pub fn failed(&mut self, id: JobId, dead_lettered: bool) {
        self.update(id, |e| {
            e.failures += 1;
            e.dead_lettered |= dead_lettered;
        });
    }

    /// Committed jobs not yet finished.
    pub fn outstanding(&self) -> i64 {
        self.outstanding
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

    /// Jobs the workers reported on that no producer reported committing.
    pub fn unknown(&self) -> Vec<JobId> {
        let mut v: Vec<_> = self
            .entries
            .iter()
            .filter(|(_, e)| !e.enqueued)
            .map(|(id, _)| *id)
            .collect();
        v.sort_unstable();
        v
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
}
