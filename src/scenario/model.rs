//! The scenario file as written: serde types with defaults, unknown keys rejected.
//!
//! Serializing a loaded `Scenario` gives the *resolved* scenario (every default filled in),
//! which each run saves as `scenario.resolved.toml`.

use super::faults::FaultSpec;
use super::values::{Confirm, FirstVacuum, HumanDuration, Rate, UpsetKind, Whole};
use crate::backend::Engine;
use crate::backend::queue::{BackoffPlan, Jitter, VariantName};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod fleets;
pub use fleets::{
    Arrival, ConsumersSection, DrainSection, HandlerSection, OutboxSection, ProducersSection,
    ReaperSection, SlowRunsSection,
};

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
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
    pub sampler: SamplerSection,
    #[serde(default)]
    pub bystander: BystanderSection,
    /// Pass/fail conditions on the whole run's figures: `"metric" = "condition"`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub thresholds: BTreeMap<String, String>,
    #[serde(default)]
    pub phases: Vec<PhaseSection>,
    /// What `dbq-bench matrix` varies (ignored by `run`).
    #[serde(default, skip_serializing_if = "MatrixSection::is_empty")]
    pub matrix: MatrixSection,
    /// How `dbq-bench capacity` searches (ignored by `run`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacitySection>,
}

/// The capacity search: offered rates from `start_rate`, doubling until a step breaks the
/// objective, then bisected to `precision`; each step a warm-up and a measured window.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CapacitySection {
    /// The first rate offered, jobs/s (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_rate: Option<f64>,
    /// The highest rate ever offered (default 100000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rate: Option<f64>,
    /// Stop when the last good and first bad rate are within this share (default 0.10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<f64>,
    /// Each step's unmeasured warm-up (default 3s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<HumanDuration>,
    /// Each step's measured window (default 10s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measure: Option<HumanDuration>,
    /// Stop searching after this long (default 5m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<HumanDuration>,
    /// The objective, as thresholds on each step's measured window (default
    /// `end_to_end.p99 < 500ms` and no enqueue or worker errors); completions must keep up
    /// and producers keep their schedule besides.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub slo: BTreeMap<String, String>,
    /// Search the consumer count instead of the rate: the fewest consumers that meet the
    /// objective at this offered rate, jobs/s (also `capacity --consumers-for RATE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumers_for_rate: Option<f64>,
    /// The most consumers a consumer-count search tries (default 64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_consumers: Option<u32>,
    /// How long the search's answer must then hold on a fresh queue: "auto" (default: the
    /// larger of 3 minutes and 3 × the server's autovacuum_naptime, so at least two
    /// autovacuum cycles), a duration, or "off" (the search's answer alone, labelled
    /// unconfirmed; also `capacity --quick`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<Confirm>,
    /// Confirmation tries at most, screens of a fresh table's first naptime and whole
    /// confirmations together; a try ends at the first window that breaks the objective
    /// (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm_tries: Option<u32>,
    /// When the confirmation's fresh table gets its first vacuum: "late" (default on
    /// PostgreSQL: autovacuum kept off it for one autovacuum_naptime, then one VACUUM paced
    /// as autovacuum's, the latest a first vacuum comes) or "whenever" (the server's
    /// autovacuum as it comes; the only choice on MariaDB, whose purge is the server's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_vacuum: Option<FirstVacuum>,
    /// After the confirmation, hold the xmin horizon (an idle transaction with an XID) this
    /// long at the same rate, judged as the confirmation is, then measure how long the queue
    /// takes to recover (also `capacity --hold-horizon`). Off by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_horizon: Option<HumanDuration>,
    /// The standard upset each whole confirmation carries once the queue has settled (after
    /// its first window): the stable capacity is the highest rate that holds *and recovers*
    /// from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upset: Option<UpsetSection>,
    /// Fresh queues the stable rate must hold and recover on, every one (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stable_runs: Option<u32>,
}

/// `[capacity.upset]`: what upsets a settled queue, how much, and how soon it must recover.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpsetSection {
    /// "pause" (default: every worker stops taking jobs for `size`), "burst" (the producers
    /// send `size` of extra arrivals, twice the rate for that long) or "none".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<UpsetKind>,
    /// The pause's length, or the burst's extra seconds of arrivals (default 1s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<HumanDuration>,
    /// The backlog must be back at its level before the upset within this long after the
    /// upset ends (default 30s); the objective is not judged in that span.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recover_within: Option<HumanDuration>,
}

/// The cells of a matrix: the cartesian product of its axes, each option a set of scenario
/// keys to change (as `--set` would), run `repeat` times, interleaved.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MatrixSection {
    /// Runs of every cell (interleaved: A B C A B C).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// Axes, each a list of options. The first axis is what is compared; each cell's ratios
    /// are to the cell with the first option of the first axis and the same other options.
    #[serde(default)]
    pub axes: Vec<Vec<MatrixOption>>,
}

impl MatrixSection {
    pub fn is_empty(&self) -> bool {
        self.repeat.is_none() && self.axes.is_empty()
    }
}

/// One option of a matrix axis.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MatrixOption {
    /// How the option is named in the comparison.
    pub label: String,
    /// Scenario keys (dotted, as with `--set`) and their values for this option.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, serde_json::Value>")]
    pub set: BTreeMap<String, toml::Value>,
}

/// How Postgres is obtained for the run.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    Serialize,
    Deserialize,
    clap::ValueEnum,
    schemars::JsonSchema,
)]
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

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DatabaseSection {
    /// `postgres` (default) or `mariadb`.
    #[serde(default)]
    pub engine: Engine,
    #[serde(default)]
    pub provider: ProviderKind,
    /// The image the container provider runs (default: the variable the engine's facts
    /// name, e.g. DBQ_POSTGRES_IMAGE, else the official image), taken as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// The server's version (`"17"`, `"10.11"`): the container provider runs the image of
    /// that tag (`postgres:17`, or the DBQ_…_IMAGE name retagged), the local provider this
    /// machine's binaries of it, and every provider refuses a server of another version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<crate::version::ServerVersion>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default = "defaults::startup_timeout")]
    pub startup_timeout: HumanDuration,
    /// Server settings (`shared_buffers`, `synchronous_commit`, …). Passed as `-c key=value`
    /// to servers the run starts; set per session on a `url` server.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, serde_json::Value>")]
    pub settings: BTreeMap<String, toml::Value>,
}

impl Default for DatabaseSection {
    fn default() -> Self {
        DatabaseSection {
            engine: Engine::Postgres,
            provider: ProviderKind::Auto,
            image: None,
            version: None,
            url: None,
            startup_timeout: defaults::startup_timeout(),
            settings: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueueSection {
    #[serde(default)]
    pub variant: VariantName,
    /// Jobs one claim statement takes: variant `batch` (default 10), or `custom` (default 1;
    /// above 1 its claim.sql takes `$1`, how many, and its complete.sql `$1`, the ids).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_batch: Option<u32>,
    /// The directory of a `custom` variant's `.sql` files (relative to the scenario file; to
    /// the current directory when given with `--set`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<std::path::PathBuf>,
    /// How long a claimed job stays invisible: variant `visibility_timeout` (default 30s),
    /// or a `custom` claim that takes `:visibility_timeout`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility_timeout: Option<HumanDuration>,
    /// How often the `rotation` variant moves producers on to its next partition (default
    /// 10s; at least 1s, the ticker's interval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotation_period: Option<HumanDuration>,
    /// The queue table's fillfactor (10–100), for HOT updates; default: the server's (100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fillfactor: Option<Whole<10, 100>>,
    /// Make the queue table UNLOGGED (no WAL; emptied by a crash).
    #[serde(default)]
    pub unlogged: bool,
    /// Value of the `max_retries` column for every job (the table's default is 3).
    #[serde(default = "defaults::max_retries")]
    pub max_retries: i32,
    #[serde(default)]
    pub backoff: BackoffSection,
    /// RabbitMQ only: the kind of queue the jobs go to: `quorum` (the default), `classic` or
    /// `transient` (read by RabbitMQ's own settings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rabbitmq_queue: Option<String>,
    /// Kafka only: the partitions of the jobs' and retries' topics (default 12, 1–1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partitions: Option<Whole<1, 1000>>,
    /// Reproduce a planning hazard on purpose: ANALYZE the queue table while it is still
    /// empty, before the prefill and before the workers first plan their statements, as a
    /// table created (or truncated) and analyzed while empty would be. Workers that keep
    /// their prepared statements then keep plans made for an empty table until something
    /// invalidates them. Off by default: the set-up never analyzes an empty table.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stale_statistics: bool,
}

impl Default for QueueSection {
    fn default() -> Self {
        QueueSection {
            variant: VariantName::Seed,
            claim_batch: None,
            visibility_timeout: None,
            rotation_period: None,
            dir: None,
            fillfactor: None,
            unlogged: false,
            max_retries: defaults::max_retries(),
            backoff: BackoffSection::default(),
            rabbitmq_queue: None,
            partitions: None,
            stale_statistics: false,
        }
    }
}

/// Delay before a failed job runs again: `min(base * factor^retry_count, cap)`, then jitter.
/// The seed's formula is base 1 minute, factor 2, no cap, no jitter.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BackoffSection {
    #[serde(default = "defaults::backoff_base")]
    pub base: HumanDuration,
    #[serde(default = "defaults::backoff_factor")]
    pub factor: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap: Option<HumanDuration>,
    #[serde(default)]
    pub jitter: Jitter,
}

impl Default for BackoffSection {
    fn default() -> Self {
        BackoffSection {
            base: defaults::backoff_base(),
            factor: defaults::backoff_factor(),
            cap: None,
            jitter: Jitter::None,
        }
    }
}

impl From<&BackoffSection> for BackoffPlan {
    fn from(b: &BackoffSection) -> BackoffPlan {
        BackoffPlan {
            base: b.base.0,
            factor: b.factor,
            cap: b.cap.map(|c| c.0),
            jitter: b.jitter,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifySection {
    /// Record every transition to `done`/`dead_letter` in a harness-owned audit table (by an
    /// AFTER UPDATE trigger), so the accounting proof can count duplicate completions from the
    /// database and not only from the harness's own ledger. Adds one insert per finished job.
    /// Unset: on where the engine can keep one (not on RabbitMQ or Kafka, which forget an
    /// acknowledged message); `true` on such an engine is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_audit: Option<bool>,
}

/// A bystander: a small table unrelated to the queue, in the run's schema, read and updated
/// by key at a fixed rate from a connection of its own. Its latency is what the queue costs
/// the rest of the database that shares the server (see `fleet::bystander`).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BystanderSection {
    /// On or off; unset: off in `run` and `matrix`, on in `capacity`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Statements per second, on a fixed schedule: point reads and single-row updates by
    /// primary key, alternately.
    #[serde(default = "defaults::bystander_rate")]
    pub rate: f64,
    /// Rows in its table.
    #[serde(default = "defaults::bystander_rows")]
    pub rows: u32,
    /// How long it is measured alone, with no queue load, before the load starts: the
    /// reference for "the queue added X ms" ("0s": not measured).
    #[serde(default = "defaults::bystander_quiet")]
    pub quiet: HumanDuration,
}

impl Default for BystanderSection {
    fn default() -> Self {
        BystanderSection {
            enabled: None,
            rate: defaults::bystander_rate(),
            rows: defaults::bystander_rows(),
            quiet: defaults::bystander_quiet(),
        }
    }
}

/// The database sampler (see `metrics::sampler`).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SamplerSection {
    /// How often database statistics are sampled (each sample scans the queue table once).
    #[serde(default = "defaults::sampler_interval")]
    pub interval: HumanDuration,
}

impl Default for SamplerSection {
    fn default() -> Self {
        SamplerSection {
            interval: defaults::sampler_interval(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// Faults injected during this phase.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultSpec>,
    /// Pass/fail conditions on this phase's figures.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub thresholds: BTreeMap<String, String>,
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
    pub fn backoff_base() -> HumanDuration {
        HumanDuration(BackoffPlan::seed().base)
    }
    pub fn backoff_factor() -> f64 {
        BackoffPlan::seed().factor
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
    pub fn restart_after() -> HumanDuration {
        HumanDuration::from_secs(1)
    }
    pub fn reaper_interval() -> HumanDuration {
        HumanDuration::from_secs(60)
    }
    pub fn stale_after() -> HumanDuration {
        HumanDuration::from_secs(600)
    }
    pub fn bystander_rate() -> f64 {
        50.0
    }
    pub fn bystander_rows() -> u32 {
        10_000
    }
    pub fn bystander_quiet() -> HumanDuration {
        HumanDuration::from_secs(5)
    }
    pub fn sampler_interval() -> HumanDuration {
        HumanDuration::from_secs(1)
    }
    pub fn drain_timeout() -> HumanDuration {
        HumanDuration::from_secs(60)
    }
}
