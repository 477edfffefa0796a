//! The scenario's fleets as the file writes them: the producers (and the outbox they may
//! write through), the consumers and their handler, the reaper, and the drain at the end.

use super::defaults;
use crate::backend::queue::ClaimMode;
use crate::scenario::values::{DurationDist, HumanDuration, Rate};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Gaps between a producer's scheduled jobs.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// Evenly spaced.
    #[default]
    Constant,
    /// Exponential gaps (a Poisson process), as independent clients would produce.
    Poisson,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProducersSection {
    /// Producer connections opened at the start (closed loop: the producers).
    #[serde(default = "defaults::one")]
    pub count: u32,
    /// Open loop: the most producer connections the fleet may have. An arrival goes to
    /// whichever connection is free; when every one is busy the fleet opens another, up to
    /// this many. Default: 4 × `count`, between 8 and 32 (never fewer than `count`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_count: Option<u32>,
    /// Default offered rate of every phase that does not set its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    #[serde(default)]
    pub arrival: Arrival,
    /// Jobs bulk-inserted before the first phase (not part of any measured window).
    #[serde(default)]
    pub prefill: u64,
    /// Approximate size of each job's JSON payload in bytes.
    #[serde(default = "defaults::payload_bytes")]
    pub payload_bytes: u32,
    /// Job `type` values and their relative weights.
    #[serde(default = "defaults::job_types")]
    pub job_types: BTreeMap<String, u32>,
    /// Job `priority` values (as strings, TOML keys) and their relative weights.
    #[serde(default = "defaults::priorities")]
    pub priorities: BTreeMap<String, u32>,
    /// A job whose insert starts later than this after its intended time counts as sent late.
    #[serde(default = "defaults::late_after")]
    pub late_after: HumanDuration,
    /// Fraction of jobs whose handler always fails (poison jobs: they end in `dead_letter`).
    #[serde(default)]
    pub poison_fraction: f64,
    /// Fraction of jobs whose handler always crashes its worker.
    #[serde(default)]
    pub crash_fraction: f64,
    #[serde(default)]
    pub outbox: OutboxSection,
}

impl Default for ProducersSection {
    fn default() -> Self {
        ProducersSection {
            count: 1,
            max_count: None,
            rate: None,
            arrival: Arrival::Constant,
            prefill: 0,
            payload_bytes: defaults::payload_bytes(),
            job_types: defaults::job_types(),
            priorities: defaults::priorities(),
            late_after: defaults::late_after(),
            poison_fraction: 0.0,
            crash_fraction: 0.0,
            outbox: OutboxSection::default(),
        }
    }
}

/// The seed's transactional outbox: each enqueue is part of a business transaction that
/// marks an `orders` row paid, and some of those transactions roll back.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutboxSection {
    #[serde(default)]
    pub enabled: bool,
    /// Fraction of business transactions that roll back (their job must never run).
    #[serde(default)]
    pub rollback_rate: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConsumersSection {
    #[serde(default = "defaults::one")]
    pub count: u32,
    /// Sleep after a claim finds no job (the article: 1 second).
    #[serde(default = "defaults::poll_interval")]
    pub poll_interval: HumanDuration,
    /// Default: `in_transaction` (the seed) where the engine has transactions, `committed`
    /// on Redis (a claim always enters the consumer group's pending list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_mode: Option<ClaimMode>,
    /// Run each worker as a child process of the runner (needed to kill or freeze workers).
    /// Unset: processes on Kafka, whose client library can crash its process when the
    /// broker fails under it (unless a `crash_workers` fault needs the workers in the
    /// runner); in the runner elsewhere. `scenario.resolved.toml` records the value used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<bool>,
    /// How long a crashed or killed worker stays down before it is replaced.
    #[serde(default = "defaults::restart_after")]
    pub restart_after: HumanDuration,
    #[serde(default)]
    pub handler: HandlerSection,
}

impl Default for ConsumersSection {
    fn default() -> Self {
        ConsumersSection {
            count: 1,
            poll_interval: defaults::poll_interval(),
            claim_mode: None,
            processes: None,
            restart_after: defaults::restart_after(),
            handler: HandlerSection::default(),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HandlerSection {
    #[serde(default)]
    pub duration: DurationDist,
    /// Probability that one run of the handler fails (0.0 – 1.0).
    #[serde(default)]
    pub error_rate: f64,
    /// Keep the worker's thread busy for the duration instead of sleeping: a CPU-bound job
    /// run inside the harness's process, which takes CPU from the load generator itself.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cpu_bound: bool,
    /// A fraction of runs that take a long time instead (a head-of-line case: on a log such
    /// as Kafka's, the records behind a slow one in its partition wait for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow: Option<SlowRunsSection>,
}

/// `[consumers.handler.slow]`: each run of the handler is slow with probability `fraction`,
/// and then takes `duration` instead of a draw from `handler.duration`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlowRunsSection {
    pub fraction: f64,
    pub duration: HumanDuration,
}

/// The seed's stale-job reaper (run from cron every 1–5 minutes in the article).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReaperSection {
    #[serde(default = "defaults::yes")]
    pub enabled: bool,
    #[serde(default = "defaults::reaper_interval")]
    pub interval: HumanDuration,
    /// Jobs `processing` for longer than this go back to `pending` (the article: 10 minutes).
    #[serde(default = "defaults::stale_after")]
    pub stale_after: HumanDuration,
    /// Count a reap as a failed attempt (retry_count + 1, dead letter at max_retries). The
    /// seed does not, so a job that always crashes its worker is retried forever.
    #[serde(default)]
    pub count_as_attempt: bool,
}

impl Default for ReaperSection {
    fn default() -> Self {
        ReaperSection {
            enabled: true,
            interval: defaults::reaper_interval(),
            stale_after: defaults::stale_after(),
            count_as_attempt: false,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DrainSection {
    /// After the last phase, how long consumers may take to finish the backlog.
    #[serde(default = "defaults::drain_timeout")]
    pub timeout: HumanDuration,
}

impl Default for DrainSection {
    fn default() -> Self {
        DrainSection {
            timeout: defaults::drain_timeout(),
        }
    }
}
