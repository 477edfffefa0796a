//! RabbitMQ's own settings (`queue.rabbitmq_queue`: the kind of queue that holds the jobs),
//! read from the scenario's keys into the plan by the registry (`EngineSettings`); only
//! this engine acts on them.

use crate::backend::{EngineSettings, QueuePlan};
use serde::{Deserialize, Serialize};

/// What a RabbitMQ queue takes beyond every engine's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// `queue.rabbitmq_queue` (default `quorum`).
    #[serde(default)]
    pub rabbitmq_queue: RabbitQueue,
}

/// The kind of RabbitMQ queue that holds the jobs.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RabbitQueue {
    /// A replicated, durable quorum queue; messages always persistent (RabbitMQ's advice
    /// for data safety).
    #[default]
    Quorum,
    /// A durable classic queue with persistent messages.
    Classic,
    /// A classic queue that is not durable, with transient messages: lost when the broker
    /// restarts (what the proof's loss check is tested against).
    Transient,
}

impl Settings {
    /// RabbitMQ's settings in `q` (their defaults in a plan made for another engine).
    pub fn of(q: &QueuePlan) -> Settings {
        match &q.engine {
            EngineSettings::Rabbitmq(s) => *s,
            _ => Settings::default(),
        }
    }
}

impl RabbitQueue {
    /// Whether the queue counts a message's lost deliveries, which counting them as failed
    /// attempts (`reaper.count_as_attempt`) needs; why not, where it does not.
    pub fn counts_deliveries(self) -> Result<(), String> {
        match self {
            RabbitQueue::Quorum => Ok(()),
            _ => Err(format!(
                "a {} queue does not count a message's deliveries, so a job that crashes its \
                 worker every time would be delivered forever: use rabbitmq_queue = \"quorum\" \
                 (its x-delivery-count header) or count_as_attempt = false",
                self.as_str()
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RabbitQueue::Quorum => "quorum",
            RabbitQueue::Classic => "classic",
            RabbitQueue::Transient => "transient",
        }
    }
}
