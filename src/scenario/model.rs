//! The scenario file as written: serde types with defaults, unknown keys rejected.
//!
//! Serializing a loaded `Scenario` gives the *resolved* scenario (every default filled in),
//! which each run saves as `scenario.resolved.toml`.

use super::values::{DurationDist, HumanDuration, Rate};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Defaults to the file name without `.toml`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Seed of every random choice of the run; drawn at random (and recorded) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(default)]
    pub database: DatabaseSection,
    #[serde(default)]
    pub queue: QueueSection,
    #[serde(default)]
    pub producers: ProducersSection,
    #[serde(default)]
    pub consumers: ConsumersSection,
    #[serde(default)]
    pub reaper: ReaperSection,
    #[serde(default)]
    pub drain: DrainSection,
    #[serde(default)]
    pub verify: VerifySection,
    #[serde(default)]
    pub phases: Vec<PhaseSection>,
}

/// How Postgres is obtained for the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// A URL if one is given, else a container, else a local throwaway cluster.
    #[default]
    Auto,
    /// A container started with testcontainers from `image`.
    Container,
    /// A throwaway cluster made with this machine's `initdb` in a temporary directory.
    Local,
    /// An existing server (`--database-url`, `database.url` or `DATABASE_URL`).
    Url,
}

impl ProviderKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            ProviderKind::Auto => "auto",
            ProviderKind::Container => "container",
            ProviderKind::Local => "local",
            ProviderKind::Url => "url",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatabaseSection {
    #[serde(default)]
    pub provider: ProviderKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default = "defaults::startup_timeout")]
    pub startup_timeout: HumanDuration,
    /// Server settings (`shared_buffers`, `synchronous_commit`, …). Passed as `-c key=value`
    /// to servers the run starts; set per session on a `url` server.
    #[serde(default)]
    pub settings: BTreeMap<String, toml::Value>,
}

impl Default for DatabaseSection {
    fn default() -> Self {
        DatabaseSection {
            provider: ProviderKind::Auto,
            image: None,
            url: None,
            startup_timeout: defaults::startup_timeout(),
            settings: BTreeMap::new(),
        }
    }
}

/// Which queue design's SQL runs. Only the seed article's design exists so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VariantName {
    #[default]
    Seed,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSection {
    #[serde(default)]
    pub variant: VariantName,
    /// Unit of the seed's backoff `POWER(2, retry_count) * unit`; the article uses 1 minute.
    #[serde(default = "defaults::backoff_unit")]
    pub backoff_unit: HumanDuration,
    /// Value of the `max_retries` column for every job (the table's default is 3).
    #[serde(default = "defaults::max_retries")]
    pub max_retries: i32,
}

impl Default for QueueSection {
    fn default() -> Self {
        QueueSection {
            variant: VariantName::Seed,
            backoff_unit: defaults::backoff_unit(),
            max_retries: defaults::max_retries(),
        }
    }
}

/// Gaps between a producer's scheduled jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// Evenly spaced.
    #[default]
    Constant,
    /// Exponential gaps (a Poisson process), as independent clients would produce.
    Poisson,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProducersSection {
    #[serde(default = "defaults::one")]
    pub count: u32,
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
}

impl Default for ProducersSection {
    fn default() -> Self {
        ProducersSection {
            count: 1,
            rate: None,
            arrival: Arrival::Constant,
            prefill: 0,
            payload_bytes: defaults::payload_bytes(),
            job_types: defaults::job_types(),
            priorities: defaults::priorities(),
            late_after: defaults::late_after(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsumersSection {
    #[serde(default = "defaults::one")]
    pub count: u32,
    /// Sleep after a claim finds no job (the article: 1 second).
    #[serde(default = "defaults::poll_interval")]
    pub poll_interval: HumanDuration,
    #[serde(default)]
    pub handler: HandlerSection,
}

impl Default for ConsumersSection {
    fn default() -> Self {
        ConsumersSection {
            count: 1,
            poll_interval: defaults::poll_interval(),
            handler: HandlerSection::default(),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandlerSection {
    #[serde(default)]
    pub duration: DurationDist,
    /// Probability that one run of the handler fails (0.0 – 1.0).
    #[serde(default)]
    pub error_rate: f64,
}

/// The seed's stale-job reaper (run from cron every 1–5 minutes in the article).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReaperSection {
    #[serde(default = "defaults::yes")]
    pub enabled: bool,
    #[serde(default = "defaults::reaper_interval")]
    pub interval: HumanDuration,
    /// Jobs `processing` for longer than this go back to `pending` (the article: 10 minutes).
    #[serde(default = "defaults::stale_after")]
    pub stale_after: HumanDuration,
}

impl Default for ReaperSection {
    fn default() -> Self {
        ReaperSection {
            enabled: true,
            interval: defaults::reaper_interval(),
            stale_after: defaults::stale_after(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
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

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifySection {
    /// Record every transition to `done`/`dead_letter` in a harness-owned audit table (by an
    /// AFTER UPDATE trigger), so the accounting proof can count duplicate completions from the
    /// database and not only from the harness's own ledger. Adds one insert per finished job.
    #[serde(default = "defaults::yes")]
    pub completion_audit: bool,
}

impl Default for VerifySection {
    fn default() -> Self {
        VerifySection {
            completion_audit: true,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseSection {
    pub name: String,
    pub duration: HumanDuration,
    /// Offered rate in this phase; defaults to `producers.rate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// Warm-up phases set this to false: their work runs but is not measured.
    #[serde(default = "defaults::yes")]
    pub measured: bool,
}

mod defaults {
    use super::*;

    pub fn one() -> u32 {
        1
    }
    pub fn yes() -> bool {
        true
    }
    pub fn startup_timeout() -> HumanDuration {
        HumanDuration::from_secs(60)
    }
    pub fn backoff_unit() -> HumanDuration {
        HumanDuration::from_secs(1)
    }
    pub fn max_retries() -> i32 {
        3
    }
    pub fn payload_bytes() -> u32 {
        128
    }
    pub fn job_types() -> BTreeMap<String, u32> {
        BTreeMap::from([("job".to_string(), 1)])
    }
    pub fn priorities() -> BTreeMap<String, u32> {
        BTreeMap::from([("0".to_string(), 1)])
    }
    pub fn late_after() -> HumanDuration {
        HumanDuration::from_millis(5)
    }
    pub fn poll_interval() -> HumanDuration {
        HumanDuration::from_secs(1)
    }
    pub fn reaper_interval() -> HumanDuration {
        HumanDuration::from_secs(60)
    }
    pub fn stale_after() -> HumanDuration {
        HumanDuration::from_secs(600)
    }
    pub fn drain_timeout() -> HumanDuration {
        HumanDuration::from_secs(60)
    }
}
