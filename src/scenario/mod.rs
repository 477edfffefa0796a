//! Scenario files: the TOML model (`model`), value notations (`values`), reading with
//! overrides (`load`) and validation into a [`Plan`] (`plan`).

pub mod change;
pub mod faults;
pub mod load;
pub mod model;
pub mod plan;
pub mod values;

pub use crate::backend::queue::{
    BackoffPlan, CUSTOM_REQUIRED_FILES, ClaimMode, Finish, Jitter, QueuePlan, VariantName,
    VariantPlan,
};
pub use crate::backend::{Engine, engine::ShutdownMode};
pub use crate::thresholds::Threshold;
pub use change::PlanChange;
pub use faults::{BackendTarget, CrashPoint, FaultSpec, Repeat};
pub use load::{Assignment, Overrides, ScenarioFile};
pub use model::{
    Arrival, BystanderSection, CapacitySection, HandlerSection, MatrixOption, MatrixSection,
    PhaseSection, ProviderKind, Scenario,
};
pub use plan::{
    BystanderPlan, ConsumerPlan, DatabasePlan, EnvDefaults, HandlerPlan, OutboxPlan, PhasePlan,
    Plan, ProducerPlan, ReaperPlan, SlowRuns,
};
pub use values::{Confirm, DurationDist, FirstVacuum, HumanDuration, Rate, UpsetKind};

use crate::error::InputError;
use std::path::Path;

/// Reads, overrides and validates a scenario file in one step.
pub fn load_plan(
    path: &Path,
    overrides: &Overrides,
    env: &EnvDefaults,
) -> Result<Plan, InputError> {
    plan_of(&ScenarioFile::read(path)?, overrides, &[], "", env)
}

/// Overrides, then `extra` assignments (whose errors name `extra_source`), then validation,
/// on a scenario file read once.
pub fn plan_of(
    file: &ScenarioFile,
    overrides: &Overrides,
    extra: &[Assignment],
    extra_source: &str,
    env: &EnvDefaults,
) -> Result<Plan, InputError> {
    let scenario = file.scenario(overrides, extra, extra_source)?;
    let source = file.source();
    let stem = Path::new(source)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("scenario");
    Plan::build(scenario, source, stem, env).map_err(|e| load::blame_the_flag(e, overrides))
}
