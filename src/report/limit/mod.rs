//! What limited a window (a phase, a capacity step, a confirmation window, the measured
//! phases together): the figures that say what held it back, and one named [`LimitKind`]
//! read from them, with its evidence and the action it implies.
//!
//! The figures: the workers' busy share (claim, handler, completion, against idle polling),
//! the producers' connections busy, the CPU of the server, the harness and everyone else on
//! the machine (and the hypervisor's steal), the harness's own timer lag and stalls, what the
//! server's sessions waited on (sampled), dead tuples and vacuum. The rules, in order, are in
//! [`Limit::judge`] and docs/GUIDE.md ("What limited it").

mod of_run;
mod table;
mod words;

pub use of_run::{Workers, limits, measured_limit, name_phase_limits, rejudge_after_thresholds};
pub use table::table;

use crate::metrics::{HarnessSummary, PhaseCounts};
use crate::report::stall::GroupStall;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A resource counts as the limit from this share of its capacity, %.
const SATURATED_PCT: f64 = 90.0;
/// The workers' busy time is theirs (their handler) rather than the server's from this
/// share of it in the handler, %.
const HANDLER_OWNS_PCT: f64 = 50.0;
/// Sessions' waits name the server's limit from this share of their busy samples, %.
const WAITS_PCT: f64 = 30.0;
/// Other processes count from this many cores.
const OTHERS_CORES: f64 = 0.5;
/// The hypervisor's steal counts from this share, %.
const STEAL_PCT: f64 = 10.0;
/// A claim this slow (median, ms) with this many dead tuples names vacuum.
const SLOW_CLAIM_MS: f64 = 2.0;
/// A claim that slowed (doubled over the window) counts from this median, ms.
const SLOWED_CLAIM_MS: f64 = 0.5;
const MANY_DEAD_TUPLES: i64 = 50_000;

/// What held a window back, as one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    /// The workers were busy running their handlers nearly all the time.
    Workers,
    /// Every producer connection the fleet may open was busy when jobs were due.
    Producers,
    /// The server's CPU (or the machine's, which the server shares with the harness).
    ServerCpu,
    /// The server's sessions waited on locks.
    LockWaits,
    /// The server's sessions waited on WAL flushes or other I/O.
    Io,
    /// Dead tuples piled up and the claim slowed: vacuum did not keep up.
    Vacuum,
    /// The harness itself: its timers stalled or ran late, so its schedule did.
    LoadMachine,
    /// Another process on the machine took the CPU the run needed.
    OtherProcess,
    /// The workers' group stopped reading part of the queue (a rebalance, a member that
    /// stopped): workers idle while records waited.
    Group,
    /// No resource was near its limit.
    None,
}

impl LimitKind {
    pub fn label(self) -> &'static str {
        match self {
            LimitKind::Workers => "the workers",
            LimitKind::Producers => "the producers",
            LimitKind::ServerCpu => "the server's CPU",
            LimitKind::LockWaits => "lock waits",
            LimitKind::Io => "I/O or WAL flush",
            LimitKind::Vacuum => "vacuum and dead tuples",
            LimitKind::LoadMachine => "the load machine",
            LimitKind::OtherProcess => "another process on the machine",
            LimitKind::Group => "the workers' group",
            LimitKind::None => "none found",
        }
    }
}

/// What the server's sessions of the run waited on, as shares of the samples in which they
/// were busy (not idle), %: `client` is time the server waited for the harness (a handler
/// inside the claim's transaction); the others are the server's own.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WaitShares {
    /// Busy sessions seen, summed over the samples.
    pub observed: i64,
    pub client_pct: f64,
    pub cpu_pct: f64,
    pub lock_pct: f64,
    pub io_pct: f64,
    pub other_pct: f64,
    /// The most common wait that is not the client's or the CPU, and its share, %.
    pub top: Option<(String, f64)>,
}

/// The class of one wait event (`type:event` on PostgreSQL, a thread state on MariaDB).
fn wait_class(event: &str) -> &'static str {
    let lower = event.to_ascii_lowercase();
    if event.starts_with("Client:") {
        "client"
    } else if event.starts_with("CPU") {
        "cpu"
    } else if event.starts_with("IO:") || event.contains(":WAL") || lower.contains("commit") {
        "io"
    } else if event.starts_with("Lock:") || event.starts_with("LWLock:") || lower.contains("lock") {
        "lock"
    } else if event.contains(':') {
        "other"
    } else {
        // A MariaDB thread state that names no wait: working.
        "cpu"
    }
}

impl WaitShares {
    pub fn of(waits: &BTreeMap<String, i64>) -> Option<WaitShares> {
        let observed: i64 = waits.values().sum();
        if observed == 0 {
            return None;
        }
        let mut by: BTreeMap<&str, i64> = BTreeMap::new();
        for (event, n) in waits {
            *by.entry(wait_class(event)).or_default() += n;
        }
        let pct =
            |class: &str| 100.0 * by.get(class).copied().unwrap_or(0) as f64 / observed as f64;
        let top = waits
            .iter()
            .filter(|(e, _)| !matches!(wait_class(e), "client" | "cpu"))
            .max_by_key(|(_, n)| **n)
            .map(|(e, n)| (e.clone(), 100.0 * *n as f64 / observed as f64));
        Some(WaitShares {
            observed,
            client_pct: pct("client"),
            cpu_pct: pct("cpu"),
            lock_pct: pct("lock"),
            io_pct: pct("io"),
            other_pct: pct("other"),
            top,
        })
    }

    /// A share of the server's own time (the samples not waiting for the client), %.
    pub(super) fn of_server_pct(&self, pct: f64) -> f64 {
        let server = 100.0 - self.client_pct;
        if server <= 0.0 {
            0.0
        } else {
            100.0 * pct / server
        }
    }
}

/// The measurements a limit is read from, over one window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LimitFigures {
    pub window_s: f64,
    pub workers: u32,
    /// A library's workers report their handler's time only.
    #[serde(default)]
    pub library_workers: bool,
    /// The workers' busy time against theirs in the window, %.
    pub workers_busy_pct: Option<f64>,
    /// The handler's part of the workers' busy time, %.
    pub handler_pct_of_busy: Option<f64>,
    /// Producer connections the fleet may open, and their share busy with inserts, %.
    pub producer_connections: u64,
    pub producers_busy_pct: Option<f64>,
    /// Jobs due while every producer connection was busy (sent late or never), % of jobs.
    pub producers_behind_pct: f64,
    /// The harness, its machine and everyone on it.
    pub machine: Option<HarnessSummary>,
    /// What the server's sessions waited on.
    pub waits: Option<WaitShares>,
    pub claim_p50_ms: f64,
    /// How the claim's cost moved over the window: the median of the per-second claim
    /// medians in its first and its last quarter, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_trend_ms: Option<(f64, f64)>,
    /// The queue table with its indexes at the window's first and last sample, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_bytes: Option<(i64, i64)>,
    pub dead_tuples_max: i64,
    pub autovacuums: i64,
    /// Checkpoints the server made in the window (where it counts them).
    #[serde(default)]
    pub checkpoints: i64,
    /// Rows the workers' statements read per claim (where the server counts reads).
    pub rows_read_per_claim: Option<f64>,
    /// With stalls: the end-to-end latency of the seconds away from them (not within 2 s
    /// before or 3 s after one), the highest per-second p50, p99 and max, ms: what the
    /// window would have shown without them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub away_from_stalls: Option<AwayFromStalls>,
    /// Where workers share the queue as a group: the partitions it stopped reading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_stall: Option<GroupStall>,
}

/// The end-to-end latency of a window's seconds away from its stalls, ms (the highest of
/// each second's figure).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct AwayFromStalls {
    pub seconds: usize,
    pub e2e_p50_ms: f64,
    pub e2e_p99_ms: f64,
    pub e2e_max_ms: f64,
}

impl AwayFromStalls {
    /// `rows`: the window's timeline seconds (since the load started); `stalls_at_s`: when
    /// its stalls were, on the same clock. `None` without stalls, or with no second left.
    pub fn of(rows: &[&crate::metrics::TimelineRow], stalls_at_s: &[f64]) -> Option<Self> {
        if stalls_at_s.is_empty() {
            return None;
        }
        let near = |second: i64| {
            stalls_at_s
                .iter()
                .any(|at| (second as f64) >= at - 3.0 && (second as f64) <= at + 3.0)
        };
        let away: Vec<_> = rows.iter().filter(|r| !near(r.second)).collect();
        let top = |f: fn(&crate::metrics::TimelineRow) -> Option<f64>| {
            away.iter().filter_map(|r| f(r)).fold(0.0, f64::max)
        };
        (!away.is_empty()).then(|| AwayFromStalls {
            seconds: away.len(),
            e2e_p50_ms: top(|r| r.e2e_p50_ms),
            e2e_p99_ms: top(|r| r.e2e_p99_ms),
            e2e_max_ms: top(|r| r.e2e_max_ms),
        })
    }

    /// The figure for a threshold's metric, where the seconds have one.
    pub fn figure(&self, metric: &str) -> Option<f64> {
        match metric {
            "end_to_end.p50" => Some(self.e2e_p50_ms),
            "end_to_end.p99" => Some(self.e2e_p99_ms),
            "end_to_end.max" => Some(self.e2e_max_ms),
            _ => None,
        }
    }
}

/// The median of the per-second claim medians in the first and the last quarter of `rows`
/// (at least four seconds with claims).
pub fn claim_trend(rows: &[&crate::metrics::TimelineRow]) -> Option<(f64, f64)> {
    let claims: Vec<f64> = rows.iter().filter_map(|r| r.claim_p50_ms).collect();
    let quarter = claims.len() / 4;
    if quarter == 0 {
        return None;
    }
    let median = |xs: &[f64]| {
        let mut v = xs.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    Some((
        median(&claims[..quarter]),
        median(&claims[claims.len() - quarter..]),
    ))
}

/// What [`LimitFigures::of`] reads: the window's counts and what was sampled over it.
pub struct Window<'a> {
    pub window_s: f64,
    pub workers: u32,
    pub library_workers: bool,
    pub producer_connections: u64,
    pub counts: &'a PhaseCounts,
    pub machine: Option<HarnessSummary>,
    pub waits: Option<&'a BTreeMap<String, i64>>,
    pub claim_p50_ms: f64,
    pub claim_trend_ms: Option<(f64, f64)>,
    pub table_bytes: Option<(i64, i64)>,
    pub dead_tuples_max: i64,
    pub autovacuums: i64,
    pub checkpoints: i64,
    pub rows_read_per_claim: Option<f64>,
    pub away_from_stalls: Option<AwayFromStalls>,
    pub group_stall: Option<GroupStall>,
}

impl LimitFigures {
    pub fn of(w: Window<'_>) -> LimitFigures {
        let c = w.counts;
        let share = |us: u64, of: f64| (of > 0.0).then(|| 100.0 * us as f64 / (of * 1e6));
        let worker_time = w.workers as f64 * w.window_s;
        let behind = c.sent_late_behind + c.dropped;
        LimitFigures {
            window_s: w.window_s,
            workers: w.workers,
            library_workers: w.library_workers,
            workers_busy_pct: share(c.workers_busy_us, worker_time)
                .filter(|_| c.workers_busy_us > 0),
            handler_pct_of_busy: (c.workers_busy_us > 0)
                .then(|| 100.0 * c.handler_busy_us as f64 / c.workers_busy_us as f64),
            producer_connections: w.producer_connections,
            producers_busy_pct: share(
                c.producers_busy_us,
                w.producer_connections as f64 * w.window_s,
            ),
            producers_behind_pct: 100.0 * behind as f64 / (c.enqueued + c.dropped).max(1) as f64,
            machine: w.machine,
            waits: w.waits.and_then(WaitShares::of),
            claim_p50_ms: w.claim_p50_ms,
            claim_trend_ms: w.claim_trend_ms,
            table_bytes: w.table_bytes,
            dead_tuples_max: w.dead_tuples_max,
            autovacuums: w.autovacuums,
            checkpoints: w.checkpoints,
            rows_read_per_claim: w.rows_read_per_claim,
            away_from_stalls: w.away_from_stalls,
            group_stall: w.group_stall,
        }
    }
}

/// The limit of a window: its kind, the figures that name it, the action it implies, and
/// every figure it was read from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limit {
    pub kind: LimitKind,
    /// The figures that name it, in one sentence.
    pub evidence: String,
    /// What to do about it, in one line.
    pub action: String,
    pub figures: LimitFigures,
}

impl Limit {
    /// Reads the limit from `figures`; `fell_short`: the window broke its objective or did
    /// not keep up (only then can a stall of the harness have decided it).
    pub fn judge(figures: LimitFigures, fell_short: bool) -> Limit {
        let (kind, evidence, action) = words::name(&figures, fell_short);
        Limit {
            kind,
            evidence,
            action,
            figures,
        }
    }

    /// The same figures judged again, now knowing whether the window fell short.
    pub fn rejudged(&self, fell_short: bool) -> Limit {
        Limit::judge(self.figures.clone(), fell_short)
    }

    /// `the workers: <evidence> → <action>`, for a terminal line.
    pub fn line(&self) -> String {
        format!("{}: {}; {}", self.kind.label(), self.evidence, self.action)
    }

    /// The window's load machine stalled while it fell short: its figures are the harness's,
    /// not the queue's, and it should be measured again.
    pub fn disturbed(&self) -> bool {
        self.kind == LimitKind::LoadMachine
    }
}

/// The rules' thresholds, for the words and the guide.
pub(super) struct Thresholds;

impl Thresholds {
    pub(super) const SATURATED_PCT: f64 = SATURATED_PCT;
    pub(super) const HANDLER_OWNS_PCT: f64 = HANDLER_OWNS_PCT;
    pub(super) const WAITS_PCT: f64 = WAITS_PCT;
    pub(super) const OTHERS_CORES: f64 = OTHERS_CORES;
    pub(super) const STEAL_PCT: f64 = STEAL_PCT;
    pub(super) const SLOW_CLAIM_MS: f64 = SLOW_CLAIM_MS;
    pub(super) const SLOWED_CLAIM_MS: f64 = SLOWED_CLAIM_MS;
    pub(super) const MANY_DEAD_TUPLES: i64 = MANY_DEAD_TUPLES;
}

impl LimitFigures {
    /// The server's own share of its sessions' busy samples in `pick`'s class, %.
    pub(super) fn server_wait_pct(&self, pick: impl Fn(&WaitShares) -> f64) -> Option<f64> {
        let w = self.waits.as_ref().filter(|w| w.observed >= 10)?;
        Some(w.of_server_pct(pick(w)))
    }

    /// The machine's cores the server (or, without its processes, the whole machine) used.
    pub(super) fn machine_busy_pct(&self) -> Option<f64> {
        self.machine.as_ref()?.machine_busy_pct
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_fall_into_classes() {
        let waits = BTreeMap::from([
            ("Client:ClientRead".to_string(), 50),
            ("CPU (no wait event)".to_string(), 20),
            ("IO:WALSync".to_string(), 15),
            ("LWLock:WALWrite".to_string(), 5),
            ("Lock:transactionid".to_string(), 10),
        ]);
        let w = WaitShares::of(&waits).unwrap();
        assert_eq!(w.observed, 100);
        assert_eq!(
            (w.client_pct, w.cpu_pct, w.io_pct, w.lock_pct),
            (50.0, 20.0, 20.0, 10.0)
        );
        assert_eq!(w.top, Some(("IO:WALSync".to_string(), 15.0)));
        // Of the server's own half, the flushes are 40%.
        assert_eq!(w.of_server_pct(w.io_pct), 40.0);
        // MariaDB's thread states.
        assert_eq!(wait_class("Waiting for table metadata lock"), "lock");
        assert_eq!(wait_class("Commit"), "io");
        assert_eq!(wait_class("Sending data"), "cpu");
        assert!(WaitShares::of(&BTreeMap::new()).is_none());
    }

    #[test]
    fn the_seconds_away_from_a_stall_tell_what_the_window_would_have_shown() {
        let rows: Vec<crate::metrics::TimelineRow> = (0..30)
            .map(|second| crate::metrics::TimelineRow {
                second,
                e2e_p99_ms: Some(if (5..=7).contains(&second) {
                    1100.0
                } else {
                    60.0
                }),
                e2e_p50_ms: Some(10.0),
                e2e_max_ms: Some(if second == 6 { 1200.0 } else { 90.0 }),
                ..Default::default()
            })
            .collect();
        let rows: Vec<&crate::metrics::TimelineRow> = rows.iter().collect();
        assert_eq!(AwayFromStalls::of(&rows, &[]), None);
        let away = AwayFromStalls::of(&rows, &[6.0]).unwrap();
        // Seconds 3 to 9 are near the stall: 23 are left, none slower than 60 ms at p99.
        assert_eq!(away.seconds, 23);
        assert_eq!(away.figure("end_to_end.p99"), Some(60.0));
        assert_eq!(away.figure("end_to_end.max"), Some(90.0));
        assert_eq!(away.figure("jobs.worker_errors"), None);
    }
}
