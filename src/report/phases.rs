//! The per-phase figures of a run, as plain data: each phase's jobs, throughput and
//! latency, the producer fleet's use and the claim probes. The summary, the verdict and the
//! table reads all read them; this module reads none of theirs.

use super::setup::RunSetup;
use crate::backend::ClaimProbe;
use crate::metrics::{LatencyReport, Measurements, Metric, MetricSet, PhaseCounts, WindowKind};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimProbeSummary {
    pub label: String,
    /// Seconds since the load started.
    pub at_s: f64,
    /// Shared buffers the claim touched (hit + read).
    pub buffers: i64,
    pub probe: ClaimProbe,
}

/// The producer fleet's connections: opened at the start, allowed, and used.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ProducerUse {
    /// Connections opened at the start (`producers.count`).
    pub count: u64,
    /// The most the fleet may open (`producers.max_count`).
    pub max_count: u64,
    /// The most it had open.
    pub connections: u64,
    /// The most inserts under way at once in the measured phases.
    pub inserts_in_flight: u64,
}

impl ProducerUse {
    pub(super) fn of(setup: &RunSetup, all: &PhaseCounts, measured: &PhaseCounts) -> ProducerUse {
        ProducerUse {
            count: setup.producers,
            max_count: setup.producer_connections,
            connections: all.producer_connections,
            inserts_in_flight: measured.inserts_in_flight,
        }
    }

    /// `4 connection(s) of 16 allowed, at most 3 insert(s) at once`.
    pub fn describe(&self) -> String {
        format!(
            "{} connection(s) of {} allowed, at most {} insert(s) at once",
            self.connections, self.max_count, self.inserts_in_flight
        )
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// Inserts committed per second of the measured window.
    pub enqueued_per_s: f64,
    /// `done` commits per second of the measured window.
    pub completed_per_s: f64,
    /// The offered rate averaged over the measured window (`None` for closed loop).
    pub offered_per_s: Option<f64>,
    pub window_s: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseSummary {
    pub name: String,
    pub kind: WindowKind,
    pub measured: bool,
    /// Seconds since the load started (negative for prefill).
    pub start_s: f64,
    pub duration_s: f64,
    /// Offered jobs/s, or "max"; none for prefill and drain.
    pub offered: Option<String>,
    pub jobs: PhaseCounts,
    pub throughput: Throughput,
    pub latency_ms: LatencyReport,
    /// For measured open-loop phases: producers kept their schedule and consumers kept up
    /// (the same rules as the verdict, applied to this phase).
    pub kept_up: Option<bool>,
    /// Seconds from the phase's start to its last finished job: shorter than the phase when
    /// the consumers ran out of work (a prefilled backlog drained before the phase ended).
    #[serde(default)]
    pub busy_s: Option<f64>,
    /// Completed jobs per second of `busy_s`: the consumers' rate while they had work.
    #[serde(default)]
    pub completed_per_busy_s: Option<f64>,
    /// What limited the phase (load phases only), with the figures it was read from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<super::limit::Limit>,
}

/// The run's windows as phase summaries, and the measured ones added up.
pub(super) struct Phases {
    pub(super) phases: Vec<PhaseSummary>,
    pub(super) measured_counts: PhaseCounts,
    pub(super) measured_metrics: MetricSet,
    /// Over the measured phases together.
    pub(super) throughput: Throughput,
}

impl Phases {
    /// `prefilled`: jobs the prefill put in (its window is left out without any);
    /// `drain_s`: how long the drain lasted (its window has no end of its own).
    pub(super) fn of(m: &Measurements, prefilled: u64, drain_s: f64) -> Phases {
        let mut phases = Vec::new();
        let mut measured_counts = PhaseCounts::default();
        let mut measured_metrics = MetricSet::default();
        let mut window_s = 0.0;
        let mut offered_jobs = 0.0;
        let mut closed_loop = false;
        let load_start_us = m.load_start_us();
        for (i, w) in m.windows.iter().enumerate() {
            if w.kind == WindowKind::Prefill && prefilled == 0 {
                continue;
            }
            let phase = w.kind == WindowKind::Phase;
            let end = if w.end_us == u64::MAX {
                w.start_us + (drain_s * 1e6) as u64
            } else {
                w.end_us
            };
            let duration_s = secs(end.saturating_sub(w.start_us));
            let counts = m.counts[i];
            let offered = phase.then(|| match w.offered_per_s {
                Some(r) => format!("{r}"),
                None => "max".to_string(),
            });
            if w.measured {
                measured_counts.add(&counts);
                measured_metrics.add(&m.metrics[i]);
                window_s += duration_s;
                match w.offered_per_s.filter(|_| phase) {
                    Some(r) => offered_jobs += r * duration_s,
                    None => closed_loop = true,
                }
            }
            let offered_per_s = w.offered_per_s.filter(|_| phase);
            let last = m.last_finished_us.get(i).copied().unwrap_or(0);
            let busy_s = (last > w.start_us).then(|| (last - w.start_us) as f64 / 1e6);
            phases.push(PhaseSummary {
                name: w.name.clone(),
                kind: w.kind,
                measured: w.measured,
                start_s: (w.start_us as f64 - load_start_us as f64) / 1e6,
                duration_s,
                offered,
                jobs: counts,
                throughput: Throughput {
                    enqueued_per_s: per_s(counts.enqueued, duration_s),
                    completed_per_s: per_s(counts.completed, duration_s),
                    offered_per_s,
                    window_s: duration_s,
                },
                latency_ms: LatencyReport::of(&m.metrics[i]),
                kept_up: (w.measured && offered_per_s.is_some())
                    .then(|| phase_kept_up(&counts, m.metrics[i].get(Metric::ScheduleLag).len())),
                busy_s,
                completed_per_busy_s: busy_s.map(|b| per_s(counts.completed, b)),
                limit: None,
            });
        }
        let throughput = Throughput {
            enqueued_per_s: per_s(measured_counts.enqueued, window_s),
            completed_per_s: per_s(measured_counts.completed, window_s),
            offered_per_s: (!closed_loop && window_s > 0.0)
                .then(|| (offered_jobs / window_s * 10.0).round() / 10.0),
            window_s,
        };
        Phases {
            phases,
            measured_counts,
            measured_metrics,
            throughput,
        }
    }
}

/// The same rules as the verdict, for one phase.
/// `scheduled`: the jobs the window's schedule intended (late ones are counted by their
/// intended time too, while `enqueued` counts commits, which a stalled producer pushes into
/// later windows).
fn phase_kept_up(c: &PhaseCounts, scheduled: u64) -> bool {
    let tolerance = ((c.enqueued as f64 * 0.02) as i64).max(10);
    let gap = c.enqueued as i64 - (c.completed + c.dead_lettered) as i64;
    (c.sent_late + c.dropped) as f64 <= 0.01 * (scheduled + c.dropped).max(1) as f64
        && gap <= tolerance
}

pub(super) fn secs(us: u64) -> f64 {
    us as f64 / 1e6
}

pub(super) fn per_s(n: u64, window_s: f64) -> f64 {
    if window_s > 0.0 {
        ((n as f64 / window_s) * 10.0).round() / 10.0
    } else {
        0.0
    }
}
