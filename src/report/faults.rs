//! The `faults` section of summary.json: what was injected, what it did, and how long the
//! queue took to recover.
//!
//! Recovery is read off the per-second timeline (so its resolution is one second). The
//! baseline is the five seconds before the fault started: mean completions per second and
//! mean queue depth. After the fault ends, `rate_recovered_after_s` is the time until the
//! first second whose completions reach 90% of the baseline rate, and
//! `backlog_recovered_after_s` the time until the first second whose queue depth is back
//! to the baseline depth (plus max(10 jobs, 10%)), and `claim_recovered_after_s` the time
//! until the first second whose median claim is back within the baseline's range (at most
//! its slowest second's median, plus 10%). `None` means not within the run.

use crate::accounting::AccountingProof;
use crate::metrics::{Ledger, Measurements, PhaseCounts, TimelineRow, WORKER_DIED};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

const BASELINE_SECONDS: i64 = 5;

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FaultSummary {
    /// Failure updates after a handler failure (poison jobs included).
    pub handler_errors: u64,
    /// Failures and reaps that sent a job back to `pending` for another attempt.
    pub retries: u64,
    pub dead_lettered: u64,
    /// Poison jobs (handler always fails) and crashing jobs (always crash their worker) enqueued.
    pub poison: u64,
    pub crashing_jobs: u64,
    pub worker_crashes: u64,
    /// How the crashed workers died, by signal or exit status (`SIGSEGV`: 96): an injected
    /// kill says SIGKILL, a client library's crash SIGSEGV.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub worker_deaths: BTreeMap<String, u64>,
    pub reaped: u64,
    pub backends_killed: u64,
    pub server_restarts: u64,
    pub enqueue_retries: u64,
    pub in_doubt_enqueues: u64,
    /// Of the in-doubt inserts, those the table showed had committed.
    pub in_doubt_enqueues_committed: u64,
    pub rolled_back_enqueues: u64,
    /// Jobs that finished without their worker reporting it (it died right after a commit),
    /// settled from the table.
    pub finished_without_report: u64,
    pub claim_mode: String,
    /// Job runs repeated after a crash, rollback or reap (at-least-once execution).
    pub duplicate_executions: u64,
    /// Jobs completed more than once (none is allowed, in either claim mode, unless the
    /// queue promises only at least once), and whether every repeat is allowed: on an
    /// at-least-once queue all are; elsewhere none may complete twice and every repeated
    /// run must be explained by a crash, rollback or reap.
    pub duplicate_completions: u64,
    pub duplicates_within_claim_mode: bool,
    /// Completions and failure updates a guarded design refused because the worker's claim
    /// had been reaped (stale outcomes): counted, not completions.
    #[serde(default)]
    pub stale_outcomes: u64,
    /// Claims per job → number of jobs.
    pub attempts: BTreeMap<u32, u64>,
    pub events: Vec<FaultEvent>,
    pub frozen_jobs: Vec<FrozenJobSummary>,
    /// What became of the jobs held by workers that died.
    #[serde(default)]
    pub orphaned_jobs: super::orphans::OrphanedJobs,
    /// Queue-table statistics taken around an xmin hold.
    pub table_probes: Vec<ProbeSummary>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultEvent {
    pub kind: String,
    pub phase: String,
    /// Seconds since the load started.
    pub at_s: f64,
    pub until_s: f64,
    pub count: u64,
    pub detail: String,
    pub recovery: Recovery,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Recovery {
    pub baseline_completed_per_s: Option<f64>,
    pub baseline_queue_depth: Option<f64>,
    pub rate_recovered_after_s: Option<f64>,
    pub backlog_recovered_after_s: Option<f64>,
    /// The slowest per-second median claim of the baseline seconds, ms.
    #[serde(default)]
    pub baseline_claim_p50_ms: Option<f64>,
    #[serde(default)]
    pub claim_recovered_after_s: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrozenJobSummary {
    pub job: i64,
    pub slot: u32,
    pub frozen_at_s: f64,
    /// How long no other worker could take the job (until it was claimed again or finished).
    pub unavailable_for_s: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeSummary {
    pub label: String,
    pub at_s: f64,
    pub live_tuples: i64,
    pub dead_tuples: i64,
    pub table_bytes: i64,
    pub total_bytes: i64,
}

impl FaultSummary {
    pub fn build(
        m: &Measurements,
        all: &PhaseCounts,
        ledger: &Ledger,
        proof: &AccountingProof,
        claim_mode: &str,
    ) -> FaultSummary {
        let secs = |us: u64| m.since_load_s(us);
        let killed = |kind: &str| {
            m.faults
                .iter()
                .filter(|f| f.kind == kind)
                .map(|f| f.count)
                .sum()
        };
        let x = &proof.executions;
        FaultSummary {
            handler_errors: all.failed,
            retries: all.failed + all.reaped - all.dead_lettered,
            dead_lettered: all.dead_lettered,
            poison: all.poison_enqueued,
            crashing_jobs: all.crash_enqueued,
            worker_crashes: all.worker_crashes,
            worker_deaths: worker_deaths(m),
            reaped: all.reaped,
            backends_killed: killed("kill_backends"),
            server_restarts: killed("restart_server"),
            enqueue_retries: all.enqueue_retries,
            in_doubt_enqueues: all.in_doubt_enqueues,
            in_doubt_enqueues_committed: proof.in_doubt_inserts_committed,
            rolled_back_enqueues: all.rolled_back_enqueues,
            finished_without_report: proof.finished_without_report,
            claim_mode: claim_mode.into(),
            duplicate_executions: x.extra_executions,
            duplicate_completions: x.completions,
            // As the proof judges them: an at-least-once queue's repeats are allowed.
            duplicates_within_claim_mode: x.at_least_once
                || x.completions == 0 && x.unexplained_executions == 0,
            stale_outcomes: x.stale_outcomes,
            attempts: ledger.attempts_histogram(),
            events: fault_events(m),
            frozen_jobs: m
                .frozen
                .iter()
                .map(|f| FrozenJobSummary {
                    job: f.job,
                    slot: f.slot,
                    frozen_at_s: secs(f.frozen_at_us),
                    unavailable_for_s: f.released_at_us.map(|r| (r - f.frozen_at_us) as f64 / 1e6),
                })
                .collect(),
            orphaned_jobs: super::orphans::OrphanedJobs::build(
                &m.orphaned,
                m.load_start_us(),
                ledger,
                (&proof.lost, &proof.stuck),
            ),
            table_probes: table_probes(m),
        }
    }
}

/// Each fault as it ran, timed from the start of the load, with the queue's recovery.
fn fault_events(m: &Measurements) -> Vec<FaultEvent> {
    let secs = |us: u64| m.since_load_s(us);
    m.faults
        .iter()
        .map(|f| FaultEvent {
            kind: f.kind.clone(),
            phase: f.phase.clone(),
            at_s: secs(f.started_us),
            until_s: secs(f.ended_us),
            count: f.count,
            detail: f.detail.clone(),
            recovery: recovery(&m.timeline, secs(f.started_us), secs(f.ended_us)),
        })
        .collect()
}

/// The queue table's probes, timed from the start of the load.
fn table_probes(m: &Measurements) -> Vec<ProbeSummary> {
    m.probes
        .iter()
        .map(|p| ProbeSummary {
            label: p.label.clone(),
            at_s: m.since_load_s(p.at_us),
            live_tuples: p.stats.live_tuples,
            dead_tuples: p.stats.dead_tuples,
            table_bytes: p.stats.table_bytes,
            total_bytes: p.stats.total_bytes,
        })
        .collect()
}

impl FaultEvent {
    /// The fault and how the queue came back after it, in one line.
    pub fn recovery_line(&self) -> String {
        let after = |what: &str, v: Option<f64>| match v {
            Some(s) => format!("{what} back after {s:.0} s"),
            None => format!("{what} not back before the run ended"),
        };
        let r = &self.recovery;
        let mut parts = vec![
            after("completions", r.rate_recovered_after_s),
            after("backlog", r.backlog_recovered_after_s),
        ];
        if r.baseline_claim_p50_ms.is_some() {
            parts.push(after("claim p50", r.claim_recovered_after_s));
        }
        format!(
            "{} in {} ({:.0}–{:.0} s): {}",
            self.kind,
            self.phase,
            self.at_s,
            self.until_s,
            parts.join(", ")
        )
    }
}

impl FaultSummary {
    /// Whether anything happened worth a line: a fault injected, or a crash, a reap, a
    /// handler error, an insert in doubt or rolled back.
    pub fn any(&self) -> bool {
        !self.events.is_empty()
            || self.worker_crashes
                + self.reaped
                + self.handler_errors
                + self.in_doubt_enqueues
                + self.rolled_back_enqueues
                > 0
    }

    /// How the crashed workers died, in parentheses (empty where none did).
    fn deaths(&self) -> String {
        if self.worker_deaths.is_empty() {
            return String::new();
        }
        let each: Vec<String> = self
            .worker_deaths
            .iter()
            .map(|(how, n)| format!("{n} {how}"))
            .collect();
        format!(" ({})", each.join(", "))
    }

    /// The counts in one sentence, for the terminal and the reports.
    pub fn counts_line(&self) -> String {
        format!(
            "{} handler errors, {} retries, {} dead-lettered, {} worker crashes{}, {} reaped, {} backends killed, {} server restarts, \
             {} in-doubt inserts ({} committed), {} rolled-back inserts, {} repeated job runs, {} duplicate completions, \
             {} stale completions or failures refused (claim mode {}: {})",
            self.handler_errors,
            self.retries,
            self.dead_lettered,
            self.worker_crashes,
            self.deaths(),
            self.reaped,
            self.backends_killed,
            self.server_restarts,
            self.in_doubt_enqueues,
            self.in_doubt_enqueues_committed,
            self.rolled_back_enqueues,
            self.duplicate_executions,
            self.duplicate_completions,
            self.stale_outcomes,
            self.claim_mode,
            if self.duplicates_within_claim_mode {
                "all repeats allowed"
            } else {
                "NOT all repeats allowed"
            }
        )
    }
}

/// How the crashed workers died, from the errors the recorder counted.
fn worker_deaths(m: &Measurements) -> BTreeMap<String, u64> {
    m.errors
        .iter()
        .filter_map(|(e, n)| Some((e.strip_prefix(WORKER_DIED)?.to_string(), *n)))
        .collect()
}

/// Time to recover after a fault that lasted from `start_s` to `end_s` (seconds since the
/// load started), read off the timeline. See the module documentation.
pub fn recovery(timeline: &[TimelineRow], start_s: f64, end_s: f64) -> Recovery {
    let first = start_s.floor() as i64;
    let last = end_s.floor() as i64;
    let before: Vec<&TimelineRow> = timeline
        .iter()
        .filter(|r| r.second >= first - BASELINE_SECONDS && r.second < first)
        .collect();
    if before.is_empty() {
        return Recovery::default();
    }
    let rate = before.iter().map(|r| r.completed as f64).sum::<f64>() / before.len() as f64;
    let depths: Vec<f64> = before
        .iter()
        .filter_map(|r| r.queue_depth.map(|d| d as f64))
        .collect();
    let depth = (!depths.is_empty()).then(|| depths.iter().sum::<f64>() / depths.len() as f64);
    let claim = before
        .iter()
        .filter_map(|r| r.claim_p50_ms)
        .max_by(f64::total_cmp);
    let after = || timeline.iter().filter(|r| r.second >= last);
    let since_end =
        |r: &TimelineRow| (((r.second + 1) as f64 - end_s).max(0.0) * 100.0).round() / 100.0;
    Recovery {
        baseline_completed_per_s: Some(rate),
        baseline_queue_depth: depth,
        rate_recovered_after_s: after()
            .find(|r| r.completed as f64 >= 0.9 * rate)
            .map(since_end),
        backlog_recovered_after_s: depth
            .and_then(|d| {
                after().find(|r| {
                    r.queue_depth
                        .is_some_and(|q| q as f64 <= d + (0.1 * d).max(10.0))
                })
            })
            .map(since_end),
        baseline_claim_p50_ms: claim,
        claim_recovered_after_s: claim
            .and_then(|c| after().find(|r| r.claim_p50_ms.is_some_and(|p| p <= 1.1 * c)))
            .map(since_end),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(second: i64, completed: u64, depth: i64) -> TimelineRow {
        TimelineRow {
            second,
            phase: "p".into(),
            enqueued: completed,
            completed,
            failed: 0,
            dead_lettered: 0,
            enqueue_errors: 0,
            worker_errors: 0,
            queue_depth: Some(depth),
            claim_statements: 0,
            e2e_p50_ms: None,
            e2e_p99_ms: None,
            e2e_max_ms: None,
            schedule_lag_max_ms: None,
            claim_p50_ms: Some(1.0),
            bystander_p99_ms: None,
            ..TimelineRow::default()
        }
    }

    #[test]
    fn recovery_is_measured_from_the_end_of_the_fault_against_the_seconds_before_it() {
        // 100/s with a backlog of 5 until second 10; a fault from 10.0 to 12.5 s stops work;
        // completions are back at second 13, the backlog at second 15.
        let mut t: Vec<TimelineRow> = (0..10).map(|s| row(s, 100, 5)).collect();
        t.extend([
            row(10, 0, 105),
            row(11, 0, 205),
            row(12, 20, 285),
            row(13, 150, 235),
            row(14, 150, 185),
            row(15, 150, 10),
        ]);
        let r = recovery(&t, 10.0, 12.5);
        assert_eq!(r.baseline_completed_per_s, Some(100.0));
        assert_eq!(r.baseline_queue_depth, Some(5.0));
        assert_eq!(r.rate_recovered_after_s, Some(1.5));
        assert_eq!(r.backlog_recovered_after_s, Some(3.5));
        // Claims: 1 ms before; 5 ms while held, 1.5 ms at 13, 1.05 ms (within 10%) at 14.
        for (row, claim) in t[10..].iter_mut().zip([5.0, 5.0, 5.0, 1.5, 1.05, 1.0]) {
            row.claim_p50_ms = Some(claim);
        }
        let r = recovery(&t, 10.0, 12.5);
        assert_eq!(r.baseline_claim_p50_ms, Some(1.0));
        assert_eq!(r.claim_recovered_after_s, Some(2.5));
        // Never recovered within the run.
        let r = recovery(&t[..14], 10.0, 12.5);
        assert_eq!(r.backlog_recovered_after_s, None);
        // No baseline before the first second.
        assert_eq!(recovery(&t, 0.0, 1.0), Recovery::default());
    }
}
