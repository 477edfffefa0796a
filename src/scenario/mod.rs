//! Scenario files: the TOML model (`model`), value notations (`values`), reading with
//! overrides (`load`) and validation into a [`Plan`] (`plan`).

pub mod faults;
pub mod load;
pub mod model;
pub mod plan;
pub mod thresholds;
pub mod values;

pub use faults::{BackendTarget, CrashPoint, FaultSpec, Repeat, ShutdownMode};
pub use load::Overrides;
pub use model::{
    Arrival, CapacitySection, ClaimMode, Engine, Jitter, MatrixOption, MatrixSection, ProviderKind,
    Scenario, VariantName,
};
pub use plan::{
    BackoffPlan, ConsumerPlan, DatabasePlan, EnvDefaults, HandlerPlan, OutboxPlan, PhasePlan, Plan,
    ProducerPlan, QueuePlan, ReaperPlan, VariantPlan,
};
pub use thresholds::Threshold;
pub use values::{DurationDist, HumanDuration, Rate};

use crate::error::InputError;
use std::path::Path;

/// Reads, overrides and validates a scenario file in one step.
pub fn load_plan(
    path: &Path,
    overrides: &Overrides,
    env: &EnvDefaults,
) -> Result<Plan, InputError> {
    let scenario = load::load(path, overrides)?;
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("scenario");
    Plan::build(scenario, &path.display().to_string(), stem, env)
        .map_err(|e| load::blame_the_flag(e, overrides))
}
