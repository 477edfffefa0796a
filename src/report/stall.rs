//! A workers' group that stopped reading part of the queue: from the sampler's figures of a
//! queue shared by a group (`stalled_partitions`, `stalled_for_ms`, read from the partitions'
//! committed offsets), the longest stall of the run and whether the group was stalled when
//! the run ended, so that a drain that timed out says whose limit it met.

use crate::metrics::Measurements;
use serde::{Deserialize, Serialize};

/// The group's stalls within one window: the most partitions stalled at once and the
/// longest stall, s.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupStall {
    pub partitions: i64,
    pub longest_s: f64,
}

impl GroupStall {
    /// From the samples taken in `[from_us, to_us)`; `None` where no partition stalled.
    pub fn within(m: &Measurements, from_us: u64, to_us: u64) -> Option<GroupStall> {
        let mut out = GroupStall::default();
        for (_, s) in m
            .db_samples
            .iter()
            .filter(|(at, _)| (from_us..to_us).contains(at))
        {
            let n = s.server.get("stalled_partitions").copied().unwrap_or(0);
            let ms = s.server.get("stalled_for_ms").copied().unwrap_or(0);
            out.partitions = out.partitions.max(n);
            out.longest_s = out.longest_s.max(ms as f64 / 1e3);
        }
        (out.partitions > 0).then_some(out)
    }

    /// Over the measured phases together.
    pub fn measured(m: &Measurements) -> Option<GroupStall> {
        let (from, to) = m.measured_span()?;
        GroupStall::within(m, from, to)
    }
}

/// The group's stalls over the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StalledGroup {
    /// The most partitions stalled at once, and the longest any stayed stalled.
    pub most_partitions: i64,
    pub longest_s: f64,
    /// When the longest stall was seen, seconds after the load started.
    pub longest_at_s: f64,
    /// Partitions stalled at the last sample, and for how long by then.
    pub at_end_partitions: i64,
    pub at_end_s: f64,
}

impl StalledGroup {
    /// `None` where the engine has no group, or no partition ever stalled.
    pub fn of(m: &Measurements) -> Option<StalledGroup> {
        let load_start = m.load_start_us();
        let mut out: Option<StalledGroup> = None;
        for (at_us, s) in &m.db_samples {
            let (Some(&n), Some(&ms)) = (
                s.server.get("stalled_partitions"),
                s.server.get("stalled_for_ms"),
            ) else {
                continue;
            };
            let g = out.get_or_insert(StalledGroup {
                most_partitions: 0,
                longest_s: 0.0,
                longest_at_s: 0.0,
                at_end_partitions: 0,
                at_end_s: 0.0,
            });
            g.most_partitions = g.most_partitions.max(n);
            if ms as f64 / 1e3 > g.longest_s {
                g.longest_s = ms as f64 / 1e3;
                g.longest_at_s = (*at_us as f64 - load_start as f64) / 1e6;
            }
            (g.at_end_partitions, g.at_end_s) = (n, ms as f64 / 1e3);
        }
        out.filter(|g| g.most_partitions > 0)
    }

    /// The stall in one sentence, for every format.
    pub fn sentence(&self) -> String {
        format!(
            "the group stopped reading part of the queue: up to {} partition(s) at once went {:.1} s at the longest (seen {:.1} s into the load) with waiting records no member committed past",
            self.most_partitions, self.longest_s, self.longest_at_s
        )
    }

    /// Why a drain that timed out did: the group was not reading part of the queue.
    pub fn at_end(&self) -> Option<String> {
        (self.at_end_partitions > 0).then(|| {
            format!(
                "the workers' group had stopped reading {} partition(s): their waiting records went uncommitted for the last {:.1} s (unassigned in a rebalance, or held by a member that stopped), a limit of the group, not of the workers' speed",
                self.at_end_partitions, self.at_end_s
            )
        })
    }
}
