//! Kafka's own settings (`queue.partitions`: the partitions of the jobs' and the retries'
//! topics), read from the scenario's keys into the plan by the registry (`EngineSettings`);
//! only this engine acts on them.

use crate::backend::{EngineSettings, QueuePlan};
use serde::{Deserialize, Serialize};

/// `queue.partitions` when not given: room for a dozen workers, each partition read by one
/// member of the group at a time.
pub const DEFAULT_PARTITIONS: u32 = 12;

/// What a Kafka queue takes beyond every engine's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// `queue.partitions` (default 12; the scenario checks 1 to 1000).
    #[serde(default = "default_partitions")]
    pub partitions: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            partitions: DEFAULT_PARTITIONS,
        }
    }
}

impl Settings {
    /// Kafka's settings in `q` (their defaults in a plan made for another engine).
    pub fn of(q: &QueuePlan) -> Settings {
        match &q.engine {
            EngineSettings::Kafka(s) => *s,
            _ => Settings::default(),
        }
    }
}

fn default_partitions() -> u32 {
    DEFAULT_PARTITIONS
}
