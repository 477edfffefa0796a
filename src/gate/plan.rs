//! The gate's first stage: each scenario read from both checkouts and validated into a plan,
//! and like-with-like decided before anything is measured. What differs by accident (another
//! scenario's name, another design or engine, another server) is refused here, key by key
//! (`--allow-different KEY`); what the pull request changes on purpose (the design's files,
//! the scenario file itself) is named, to be judged.

use crate::backend::design_files::DesignFiles;
use crate::compare::{Figures, Measured, ScopeFigures, Sorted, differences};
use crate::error::InputError;
use crate::report::design::DesignRecord;
use crate::scenario::{EnvDefaults, Overrides, Plan, ScenarioFile, plan_of};
use crate::status::Status;
use std::path::{Path, PathBuf};

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

/// Which checkout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Base,
    Cand,
}

impl Side {
    pub const BOTH: [Side; 2] = [Side::Base, Side::Cand];

    /// `base` or `cand`: the side's directory of runs and its word in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Base => "base",
            Side::Cand => "cand",
        }
    }
}

/// One scenario of the gate, planned on both sides.
pub struct Half {
    /// The scenario's `name` (the same on both sides): the scope its figures are judged
    /// under and the directory its runs go to.
    pub name: String,
    /// The scenario file, relative to each checkout.
    pub file: PathBuf,
    pub base: Plan,
    pub cand: Plan,
    /// What the pull request changed in it on purpose, known before measuring: the scenario
    /// file, the design's files.
    pub changes: Vec<String>,
}

impl Half {
    pub fn plan(&self, side: Side) -> &Plan {
        match side {
            Side::Base => &self.base,
            Side::Cand => &self.cand,
        }
    }
}

/// Every scenario, planned on both sides and found alike enough to compare.
pub struct GatePlan {
    pub halves: Vec<Half>,
}

impl GateRequest {
    /// Reads and validates every scenario on both sides, and refuses what differs by
    /// accident (unless `allowed`) before anything runs.
    pub fn plan(&self, allowed: &[crate::compare::Key]) -> Result<GatePlan, InputError> {
        for (side, root) in [("BASE", &self.base), ("CAND", &self.cand)] {
            if !root.is_dir() {
                return Err(InputError::whole(
                    format!("{side} {}", root.display()),
                    "is not a directory: give the checkout of the team's repository on that side",
                ));
            }
        }
        let mut halves: Vec<Half> = Vec::new();
        for file in &self.scenarios {
            let half = self.half(file, allowed)?;
            if let Some(other) = halves.iter().find(|h| h.name == half.name) {
                return Err(InputError::whole(
                    format!("--scenario {}", file.display()),
                    format!(
                        "its name {:?} is also {}'s: each scenario of a gate needs a name of its own (its figures and runs go by it)",
                        half.name,
                        other.file.display()
                    ),
                ));
            }
            halves.push(half);
        }
        Ok(GatePlan { halves })
    }

    fn half(&self, file: &Path, allowed: &[crate::compare::Key]) -> Result<Half, InputError> {
        if file.is_absolute() {
            return Err(InputError::whole(
                format!("--scenario {}", file.display()),
                "give the scenario's path relative to the checkouts (e.g. bench/queue-gate.toml): each side reads its own copy",
            ));
        }
        let base = self.side_plan(Side::Base, file)?;
        let cand = self.side_plan(Side::Cand, file)?;
        let mut changes = Vec::new();
        let text = |root: &Path| std::fs::read(root.join(file)).unwrap_or_default();
        if text(&self.base) != text(&self.cand) {
            changes.push(format!("scenario file {} changed", file.display()));
        }
        let sorted = alike(&base, &cand, allowed)?;
        if let Some(refusal) = sorted.refusal() {
            return Err(InputError::whole(
                format!("--scenario {}", file.display()),
                format!("{refusal} (decided before measuring)"),
            ));
        }
        changes.extend(sorted.changes.into_iter().map(|d| d.text));
        Ok(Half {
            name: base.name.clone(),
            file: file.to_path_buf(),
            base,
            cand,
            changes,
        })
    }

    fn side_plan(&self, side: Side, file: &Path) -> Result<Plan, InputError> {
        let root = match side {
            Side::Base => &self.base,
            Side::Cand => &self.cand,
        };
        let path = root.join(file);
        if !path.is_file() {
            return Err(InputError::whole(
                format!("--scenario {}", file.display()),
                format!(
                    "not found in the {} checkout ({}): a scenario of the gate must be in both",
                    side.as_str(),
                    root.display()
                ),
            ));
        }
        let mut overrides = self.overrides.clone();
        overrides.sets.extend(match side {
            Side::Base => self.base_sets.iter().cloned(),
            Side::Cand => self.cand_sets.iter().cloned(),
        });
        let scenario = ScenarioFile::read(&path)?;
        plan_of(&scenario, &overrides, &[], "", &self.env)
    }
}

/// The two plans' differences, sorted: what they measure, as `compare` will read it from
/// their results (the scenario's name, the design by name, the server asked for).
fn alike(base: &Plan, cand: &Plan, allowed: &[crate::compare::Key]) -> Result<Sorted, InputError> {
    let (b, c) = (figures_of(base)?, figures_of(cand)?);
    let mut found = differences(&b, &c);
    if base.database != cand.database {
        found.push(crate::compare::Difference {
            key: crate::compare::Key::Server,
            text: format!(
                "server: the two sides' [database] differ ({}), so they would run on two servers, not side by side",
                database_differences(base, cand).join(", ")
            ),
        });
    }
    Ok(Sorted::of(found, allowed))
}

/// What the run of `plan` will measure, as a scope of figures with no values.
fn figures_of(plan: &Plan) -> Result<Figures, InputError> {
    let files = match &plan.queue.variant.dir {
        Some(dir) => Some(DesignFiles::read(dir).map_err(|e| {
            InputError::whole(dir.display().to_string(), format!("cannot be read: {e}"))
        })?),
        None => None,
    };
    let setup = crate::run::setup_of(plan);
    let design = DesignRecord::planned(&setup, plan.queue.variant.claim_batch, files.as_ref());
    let server = match &plan.database.version {
        Some(v) => format!("{} {v}", plan.database.engine.label()),
        None => plan.database.engine.label().to_string(),
    };
    let mut scope = ScopeFigures::default();
    let measured = Measured {
        scenario: Some(plan.name.clone()),
        design: Some(design.identity()),
        server: Some(server),
        files,
        library: None,
        storage: None,
    };
    scope.identity.add(measured, true, "the plan");
    Ok(Figures::from([("run".to_string(), scope)]))
}

/// `version 15 vs 17`, `settings … vs …`: where two `[database]` sections differ.
fn database_differences(base: &Plan, cand: &Plan) -> Vec<String> {
    let (b, c) = (&base.database, &cand.database);
    let mut out = Vec::new();
    let mut differ = |what: &str, x: String, y: String| {
        if x != y {
            out.push(format!("{what} {x} vs {y}"));
        }
    };
    differ("engine", b.engine.label().into(), c.engine.label().into());
    let version = |v: &Option<crate::version::ServerVersion>| {
        v.as_ref().map_or("(any)".to_string(), |v| v.to_string())
    };
    differ("version", version(&b.version), version(&c.version));
    differ(
        "provider",
        b.provider.as_str().into(),
        c.provider.as_str().into(),
    );
    differ("image", b.image.clone(), c.image.clone());
    differ(
        "settings",
        format!("{:?}", b.settings),
        format!("{:?}", c.settings),
    );
    differ(
        "startup_timeout",
        format!("{:?}", b.startup_timeout),
        format!("{:?}", c.startup_timeout),
    );
    if out.is_empty() {
        out.push("url".into());
    }
    out
}
