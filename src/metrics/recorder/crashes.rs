//! The recorder's bookkeeping of workers that died or were frozen: the jobs they held, when
//! each ran again or was released, and how each worker died.

use super::{RECENT_TAKES, Recorder};
use crate::metrics::event::JobId;
use crate::metrics::measurements::{FrozenJob, ORPHANS_KEPT, OrphanedJob, WORKER_DIED};

impl Recorder {
    /// A dead worker's job ran again when any worker claims it.
    pub(super) fn rerun_orphan(&mut self, job: JobId, at_us: u64) {
        for o in self
            .orphaned
            .iter_mut()
            .filter(|o| o.job == job && o.ran_again_at_us.is_none() && at_us >= o.died_at_us)
        {
            o.ran_again_at_us = Some(at_us);
        }
    }

    /// A frozen worker's job counts as released when anyone claims or finishes it. Returns
    /// whether it was held by a frozen worker until now.
    pub(super) fn release_frozen(&mut self, job: JobId, at_us: u64) -> bool {
        if self.recent_takes.len() >= RECENT_TAKES {
            self.recent_takes.pop_front();
        }
        self.recent_takes.push_back((job, at_us));
        let mut released = false;
        for f in self
            .frozen
            .iter_mut()
            .filter(|f| f.job == job && f.released_at_us.is_none() && at_us >= f.frozen_at_us)
        {
            f.released_at_us = Some(at_us);
            released = true;
        }
        released
    }

    /// A freeze is reported once its search ends, stamped with the moment the worker
    /// stopped: a job the reaper took back in between was released then, which the recent
    /// claims and finishes say.
    pub(super) fn on_worker_frozen(&mut self, at_us: u64, slot: u32, jobs: Vec<JobId>) {
        for job in jobs {
            let taken = self
                .recent_takes
                .iter()
                .find(|(j, t)| *j == job && *t >= at_us);
            let released_at_us = taken.map(|(_, t)| *t);
            self.frozen.push(FrozenJob {
                job,
                slot,
                frozen_at_us: at_us,
                released_at_us,
            });
        }
    }

    /// A worker died holding `jobs` (in doubt: they may run again) and having reported
    /// `reported` shortly before (the library may not have recorded those outcomes).
    /// How it died (a signal, an exit status) is counted among the errors, without its
    /// last words.
    pub(super) fn on_worker_crashed(
        &mut self,
        at_us: u64,
        slot: u32,
        (jobs, reported): (Vec<JobId>, Vec<JobId>),
        cause: &str,
    ) {
        let how = cause.split(" (").next().unwrap_or_default();
        self.note_error(format!("{WORKER_DIED}{how}"));
        let w = self.window_of(at_us);
        self.counts[w].worker_crashes += 1;
        let room = ORPHANS_KEPT.saturating_sub(self.orphaned.len());
        self.orphaned
            .extend(jobs.iter().take(room).map(|&job| OrphanedJob {
                job,
                slot,
                died_at_us: at_us,
                ran_again_at_us: None,
            }));
        for job in jobs {
            self.ledger.crashed(job);
            self.doubt_changed = true;
        }
        for job in reported {
            self.ledger.crashed_after_report(job);
        }
    }
}
