//! `dbq-bench gate BASE CAND`: a team's pull request against its base, measured side by side
//! in pairs on one server, and judged as `compare` judges. The subject is the team's queue:
//! BASE and CAND are two checkouts of the team's repository, each read for its own scenario
//! files (and, through them, its own design directory or library worker), while this one
//! binary measures both, so a change in the tool can never pass for a change in the queue.
//!
//! In three stages, each its own file: [`plan`] reads both sides and refuses what differs by
//! accident before anything is measured; [`measure`] prepares each side, starts one server
//! and runs the pairs (A B, B A, …); [`verdict`] reads the runs back, names what changed and
//! judges every figure of every scenario at one false-alarm rate for the whole gate.

mod measure;
mod plan;
mod verdict;

pub use measure::{Measurement, measure};
pub use plan::{GatePlan, Half, Side};
pub use verdict::{GateVerdict, ScenarioChanges, judge, markdown};

use crate::scenario::{EnvDefaults, Overrides};
use crate::status::Status;
use std::path::PathBuf;

/// What the gate is asked to do, as the command line (or a test) gives it.
pub struct GateRequest {
    /// The base's checkout (the pull request's target branch).
    pub base: PathBuf,
    /// The candidate's checkout (the pull request).
    pub cand: PathBuf,
    /// Scenario files, each relative to both checkouts.
    pub scenarios: Vec<PathBuf>,
    /// Pairs of runs (base and candidate side by side) per scenario.
    pub pairs: u32,
    /// Changes to both sides: the provider, image, URL and `--set`s.
    pub overrides: Overrides,
    /// `--set`s for one side only, after the common ones.
    pub base_sets: Vec<String>,
    pub cand_sets: Vec<String>,
    /// A shell command run in each checkout before anything is measured (installing the
    /// side's own library version, say); `DBQ_GATE_SIDE` says which side.
    pub prepare: Option<String>,
    pub out_dir: PathBuf,
    pub env: EnvDefaults,
    pub status: Status,
}

/// The fewest and most pairs: one pair has no spread to judge.
pub const PAIRS: std::ops::RangeInclusive<u32> = 2..=50;
