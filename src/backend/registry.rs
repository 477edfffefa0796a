//! The registry: one line per engine folder. The line names the engine (as scenarios spell
//! it, lowercased) and its folder, whose `DRIVER` is everything the harness knows of it:
//! its facts (`facts.rs`), how providers make a server, how queues are installed and worked.
//! Adding an engine is its folder and one line here; `tests` below walk every line.

use super::seam::Driver;
use serde::{Deserialize, Serialize};

macro_rules! registry {
    ($( $(#[$meta:meta])* $variant:ident => $folder:ident, )+) => {
        /// Which server the queue lives in.
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize,
            clap::ValueEnum, schemars::JsonSchema,
        )]
        #[serde(rename_all = "lowercase")]
        pub enum Engine {
            $( $(#[$meta])* $variant, )+
        }

        impl Engine {
            /// Every registered engine, in registry order.
            pub const ALL: &'static [Engine] = &[$(Engine::$variant),+];

            /// The engine's driver, from its folder.
            pub fn driver(self) -> &'static dyn Driver {
                match self {
                    $( Engine::$variant => &super::$folder::DRIVER, )+
                }
            }
        }
    };
}

registry! {
    /// PostgreSQL (the article's engine; every variant).
    #[default]
    Postgres => postgres,
    /// MariaDB ≥ 10.6 (MySQL's `SKIP LOCKED`; variants `seed`, `batch`, `delete`, `archive`,
    /// `visibility_timeout` and `custom`).
    Mariadb => mariadb,
    /// RabbitMQ ≥ 3.10, a broker: a quorum queue, publisher confirms, acknowledgements after
    /// the handler (variants `seed` and `batch` as the prefetch).
    Rabbitmq => rabbitmq,
    /// Redis ≥ 7 Streams, a broker: a consumer group claims, `XACK` completes (variants
    /// `seed` and `batch` as the job's life, not as SQL).
    Redis => redis_streams,
    /// No server: a queue in the harness's own memory (`--database-url memory://`), for the
    /// harness's ceiling and the logic above the seam.
    Memory => memory,
}
