//! The per-phase figures of a run, as plain data: each phase's jobs, throughput and
//! latency, the producer fleet's use and the claim probes. The summary, the verdict and the
//! table reads all read them; this module reads none of theirs.

use super::setup::RunSetup;
use crate::backend::ClaimProbe;
use crate::metrics::{LatencyReport, PhaseCounts, WindowKind};
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
