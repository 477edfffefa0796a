//! What became of the jobs held by workers that died (killed by a fault, crashed by a job,
//! or gone on their own): whether a worker ran each again and after how long, and how it
//! ended — done, dead-lettered, or neither (stuck in flight, or lost: the proof names those),
//! and whether it was completed more than once. Rules: times are on the run clock, from the
//! worker's death to the next start of the job by any worker; an ending comes from the
//! ledger after the proof settled it, or, for a job that did not finish, from the proof's
//! view of the table; at most [`LISTED`] jobs are listed, the counts are complete for the
//! jobs the recorder kept.

use crate::accounting::JobProblem;
use crate::metrics::{Ledger, OrphanedJob};
use serde::{Deserialize, Serialize};

/// Orphaned jobs listed one by one in the summary.
const LISTED: usize = 20;

/// The jobs dead workers held, and what became of them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct OrphanedJobs {
    pub count: u64,
    /// Started again by a worker (the queue's or the library's own recovery).
    pub ran_again: u64,
    /// Seconds from the death to the next start: median and longest.
    pub ran_again_after_s_p50: Option<f64>,
    pub ran_again_after_s_max: Option<f64>,
    pub done: u64,
    pub dead_letter: u64,
    /// Neither done nor dead-lettered at the end: stuck in flight, lost, or still queued.
    pub unfinished: u64,
    /// Completed (or, for a library's workers, run to success) more than once.
    pub completed_more_than_once: u64,
    pub jobs: Vec<OrphanedJobSummary>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrphanedJobSummary {
    pub job: i64,
    pub slot: u32,
    /// Seconds since the load started.
    pub died_at_s: f64,
    pub ran_again_after_s: Option<f64>,
    /// `done`, `dead_letter`, or the table's state of a job that finished neither way.
    pub ended: String,
    pub completions: u32,
}

impl OrphanedJobs {
    /// `lost`: the proof's lost jobs, with the table's view of each; `stuck`: the ones it
    /// found still in flight with no live worker.
    pub fn build(
        orphaned: &[OrphanedJob],
        load_start_us: u64,
        ledger: &Ledger,
        (lost, stuck): (&[JobProblem], &[i64]),
    ) -> OrphanedJobs {
        let load_start = load_start_us as f64;
        let mut out = OrphanedJobs {
            count: orphaned.len() as u64,
            ..OrphanedJobs::default()
        };
        let mut waits: Vec<f64> = Vec::new();
        for o in orphaned {
            let entry = ledger.get(o.job).unwrap_or_default();
            let ran_again_after_s = o
                .ran_again_at_us
                .map(|at| at.saturating_sub(o.died_at_us) as f64 / 1e6);
            waits.extend(ran_again_after_s);
            let ended = match entry.finished() {
                true => entry.expected_status().to_string(),
                false if stuck.contains(&o.job) => "stuck in flight".into(),
                false => lost
                    .iter()
                    .find(|p| p.id == o.job)
                    .map_or("unfinished".into(), |p| p.table.clone()),
            };
            match ended.as_str() {
                "done" => out.done += 1,
                "dead_letter" => out.dead_letter += 1,
                _ => out.unfinished += 1,
            }
            out.completed_more_than_once += u64::from(entry.completions > 1);
            if out.jobs.len() < LISTED {
                out.jobs.push(OrphanedJobSummary {
                    job: o.job,
                    slot: o.slot,
                    died_at_s: (o.died_at_us as f64 - load_start) / 1e6,
                    ran_again_after_s,
                    ended,
                    completions: entry.completions,
                });
            }
        }
        waits.sort_by(f64::total_cmp);
        out.ran_again = waits.len() as u64;
        out.ran_again_after_s_p50 = waits.get(waits.len() / 2).copied();
        out.ran_again_after_s_max = waits.last().copied();
        out
    }

    /// One line: how many ran again and when, how they ended, the first unfinished ones.
    pub fn line(&self) -> String {
        let after = match (self.ran_again_after_s_p50, self.ran_again_after_s_max) {
            (Some(p50), Some(max)) => format!(" after {p50:.1} s (median; {max:.1} s at most)"),
            _ => String::new(),
        };
        let mut line = format!(
            "dead workers held {} job(s): {} ran again{after}; {} ended done, {} dead-lettered, {} neither; {} completed more than once",
            self.count,
            self.ran_again,
            self.done,
            self.dead_letter,
            self.unfinished,
            self.completed_more_than_once
        );
        let stuck: Vec<String> = self
            .jobs
            .iter()
            .filter(|j| j.ended != "done" && j.ended != "dead_letter")
            .take(5)
            .map(|j| format!("job {} {}", j.job, j.ended))
            .collect();
        if !stuck.is_empty() {
            line.push_str(&format!(" ({})", stuck.join(", ")));
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_orphan_ends_as_the_ledger_or_the_table_says() {
        let mut ledger = Ledger::default();
        for id in 1..=3 {
            ledger.enqueued(id);
            ledger.claimed(id, None);
            ledger.crashed(id);
        }
        ledger.claimed(1, None);
        ledger.completed(1);
        ledger.completed(1);
        let orphaned = [
            OrphanedJob {
                job: 1,
                slot: 0,
                died_at_us: 1_000_000,
                ran_again_at_us: Some(3_500_000),
            },
            OrphanedJob {
                job: 2,
                slot: 1,
                died_at_us: 2_000_000,
                ran_again_at_us: None,
            },
        ];
        let lost = [JobProblem {
            id: 2,
            ledger: "open".into(),
            table: "processing".into(),
            why: None,
        }];
        let o = OrphanedJobs::build(&orphaned, 0, &ledger, (&lost, &[]));
        assert_eq!((o.count, o.ran_again, o.done, o.unfinished), (2, 1, 1, 1));
        assert_eq!(o.completed_more_than_once, 1);
        assert_eq!(o.ran_again_after_s_max, Some(2.5));
        assert_eq!(o.jobs[1].ended, "processing");
        assert!(o.line().contains("(job 2 processing)"), "{}", o.line());
    }
}
