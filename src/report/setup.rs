//! What a run was set up to do, as plain data: the scenario's name and seed, the engine, the
//! workers and producers, the design's options. The run fills it in from its plan
//! (`run::setup_of`); the report is built from it and the measurements alone, and never
//! reads a scenario.

use crate::backend::{ClaimMode, Engine};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The set-up a report describes.
#[derive(Debug, Clone, Default)]
pub struct RunSetup {
    pub name: String,
    pub description: String,
    /// Where the scenario came from (a path).
    pub file: String,
    pub seed: u64,
    /// SHA-256 of the scenario with every default filled in (`scenario.resolved.toml`).
    pub scenario_sha256: String,
    pub engine: Engine,
    /// The server settings the scenario asked for, `name = value`.
    pub database_settings: Vec<(String, String)>,
    /// Who decides when a claim commits.
    pub claim_rule: ClaimRule,
    /// How long an idle worker waits before it looks again.
    pub poll_interval: Duration,
    /// The queue table was analyzed while empty, on purpose (`queue.stale_statistics`).
    pub stale_statistics: bool,
    pub workers: u32,
    /// A library's own worker processes (they report their handlers' time only).
    pub library: bool,
    pub producers: u64,
    /// The most producers' connections at once.
    pub producer_connections: u64,
    pub bystander: Option<BystanderSetup>,
    pub design: DesignOptions,
}

/// The bystander's offered load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BystanderSetup {
    pub rate_per_s: f64,
    pub rows: u32,
}

/// The options that shape the design, as the scenario set them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DesignOptions {
    /// `seed`, `batch`, …, `custom`.
    pub variant: String,
    pub fillfactor: Option<u32>,
    pub unlogged: bool,
    /// A custom design's directory.
    pub custom_dir: Option<String>,
}

/// Who decides when a claim commits: the scenario's claim mode for the harness's workers,
/// the library's own rules for a library's (`library`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimRule {
    #[default]
    InTransaction,
    Committed,
    Library,
}

impl ClaimRule {
    /// A library's workers decide for themselves; the harness's follow `mode`.
    pub fn of(library: bool, mode: ClaimMode) -> ClaimRule {
        match (library, mode) {
            (true, _) => ClaimRule::Library,
            (false, ClaimMode::InTransaction) => ClaimRule::InTransaction,
            (false, ClaimMode::Committed) => ClaimRule::Committed,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ClaimRule::InTransaction => "in_transaction",
            ClaimRule::Committed => "committed",
            ClaimRule::Library => "library",
        }
    }
}
