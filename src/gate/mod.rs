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
pub use plan::{GatePlan, GateRequest, Half, PAIRS, Side};
pub use verdict::{GateVerdict, ScenarioChanges, judge, markdown};
