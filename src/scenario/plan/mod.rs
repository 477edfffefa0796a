//! The plan: a scenario after validation, with every default and inherited value resolved.
//! Everything downstream of `scenario` takes a `Plan`, never TOML. Each section's plan and its
//! checks live together in a file of their own (`database`, `queue`, `fleets`, `phases`);
//! `needs` asks the engine's facts for what the scenario needs; this file puts them in order
//! and holds the limits that span sections.

use super::faults::{FaultSpec, Repeat};
use super::values::{DurationDist, Rate};
use crate::backend::queue::{
    ClaimMode, ExternalWorkers, Finish, QueuePlan, VariantName, VariantPlan, required_files,
};
use crate::backend::sql::declared::Declaration;
use crate::backend::{Engine, EngineSettings, engine::Supports};
use crate::error::InputError;
use crate::named_params::{ClaimParam, MarkParam, takes};
use crate::scenario::model::{
    Arrival, BystanderSection, ConsumersSection, DatabaseSection, PhaseSection, ProducersSection,
    ProviderKind, Scenario, SlowRunsSection,
};
use crate::thresholds::{self, Threshold};
use serde::{Deserialize, Serialize};
use std::time::Duration;

mod database;
mod fleets;
mod needs;
mod phases;
mod queue;

pub use database::DatabasePlan;
use database::database_plan;
pub use fleets::{
    BystanderPlan, ConsumerPlan, HandlerPlan, OutboxPlan, ProducerPlan, ReaperPlan, SlowRuns,
};
use fleets::{bystander_plan, consumer_plan, outbox_plan, producer_plan};
use needs::check_engine;
pub use phases::PhasePlan;
use phases::phase_plans;
use queue::{check_design_claims, queue_plan};

#[derive(Debug, Clone)]
pub struct Plan {
    pub name: String,
    pub description: String,
    /// Where the scenario came from (a path), for reports.
    pub source: String,
    pub seed: u64,
    pub database: DatabasePlan,
    pub queue: QueuePlan,
    pub producers: ProducerPlan,
    pub consumers: ConsumerPlan,
    pub phases: Vec<PhasePlan>,
    /// The stale-job reaper, when enabled.
    pub reaper: Option<ReaperPlan>,
    pub drain_timeout: Duration,
    pub completion_audit: bool,
    /// The scenario (or a `--set`) said whether the completion audit runs: a study that
    /// leaves it off by default (`capacity`) keeps what was asked.
    pub audit_asked: bool,
    pub sampler_interval: Duration,
    /// Thresholds on the whole run and on phases.
    pub thresholds: Vec<Threshold>,
    /// The bystander's load, when it is on.
    pub bystander: Option<BystanderPlan>,
    /// The scenario with all defaults filled in, as saved to `scenario.resolved.toml`.
    pub resolved: Scenario,
}

/// Values the plan takes from the environment when neither the file nor a flag sets them.
#[derive(Debug, Clone, Default)]
pub struct EnvDefaults {
    /// The image each engine's variable names (its facts' `install.variable`, e.g. `DBQ_POSTGRES_IMAGE`).
    pub images: Vec<(Engine, String)>,
    /// `DATABASE_URL`
    pub database_url: Option<String>,
}

impl EnvDefaults {
    /// The process's environment (blank values count as unset).
    pub fn from_env() -> EnvDefaults {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        EnvDefaults {
            images: Engine::ALL
                .iter()
                .filter_map(|&e| Some((e, var(e.facts().install.as_ref()?.variable)?)))
                .collect(),
            database_url: var("DATABASE_URL"),
        }
    }

    /// The image the environment names for `engine`.
    pub fn image(&self, engine: Engine) -> Option<&str> {
        self.images
            .iter()
            .find(|(e, _)| *e == engine)
            .map(|(_, i)| i.as_str())
    }
}

const HOUR: Duration = Duration::from_secs(3600);

/// The sampler's, the drain's and the reaper's intervals: long enough to mean something.
fn check_intervals(scenario: &Scenario) -> Result<(), (&'static str, &'static str)> {
    let r = &scenario.reaper;
    if r.enabled && r.interval.0 < Duration::from_millis(10) {
        return Err(("reaper.interval", "must be at least 10ms"));
    }
    if scenario.sampler.interval.0 < Duration::from_millis(100) {
        return Err(("sampler.interval", "must be at least 100ms"));
    }
    if scenario.drain.timeout.0.is_zero() {
        return Err(("drain.timeout", "must be more than 0s"));
    }
    Ok(())
}

impl Plan {
    /// Validates a loaded scenario. `source` names the file in errors; `stem` is the default
    /// scenario name.
    pub fn build(
        mut scenario: Scenario,
        source: &str,
        stem: &str,
        env: &EnvDefaults,
    ) -> Result<Plan, InputError> {
        let err = |key: &str, reason: String| InputError::new(source, key, reason);
        check_limits(&scenario).map_err(|(key, reason)| err(&key, reason))?;
        let name = scenario.name.clone().unwrap_or_else(|| stem.to_string());
        if name.trim().is_empty() || name.len() > 100 {
            return Err(err("name", "must be 1 to 100 characters".into()));
        }
        scenario.name = Some(name.clone());
        // Drawn seeds stay below 2^32 so they fit a TOML integer when written back.
        let seed = *scenario
            .seed
            .get_or_insert_with(|| u64::from(rand::random::<u32>()));
        let database = database_plan(&scenario.database, env, source)?;
        let queue = queue_plan(&scenario, source)?;
        check_engine(&scenario).map_err(|(key, reason)| err(&key, reason))?;
        fill_resolved(&mut scenario, &database, &queue);
        let mut producers = producer_plan(&scenario.producers, source)?;
        settle_processes(&mut scenario);
        let mut consumers = consumer_plan(&scenario.consumers, scenario.database.engine, source)?;
        // A queue library's workers are processes of their own, whatever the key says.
        consumers.processes |= queue.variant.workers.is_some();
        check_design_claims(&queue, &consumers, &scenario.reaper)
            .map_err(|(key, reason)| err(key, reason))?;
        if queue.redeliveries_count {
            (scenario.database.engine.facts().counts_deliveries)(&queue)
                .map_err(|reason| err("reaper.count_as_attempt", reason))?;
        }
        let audit_asked = scenario.verify.completion_audit.is_some();
        let audit = settle_audit(&mut scenario);
        let default_rate = scenario.producers.rate;
        let phases = phase_plans(
            &mut scenario.phases,
            default_rate,
            consumers.processes,
            source,
        )?;
        let r = &scenario.reaper;
        let reaper = r.enabled.then_some(ReaperPlan {
            interval: r.interval.0,
            stale_after: r.stale_after.0,
            count_as_attempt: r.count_as_attempt,
        });
        producers.outbox = outbox_plan(&scenario.producers, &phases, source)?;
        let thresholds = threshold_list(&scenario, source)?;
        check_intervals(&scenario).map_err(|(key, reason)| err(key, reason.into()))?;
        let bystander = bystander_plan(&scenario.bystander)
            .map_err(|(key, reason)| err(&format!("bystander.{key}"), reason))?;
        Ok(Plan {
            name,
            description: scenario.description.clone(),
            source: source.to_string(),
            seed,
            database,
            queue,
            producers,
            consumers,
            phases,
            reaper,
            drain_timeout: scenario.drain.timeout.0,
            sampler_interval: scenario.sampler.interval.0,
            thresholds,
            bystander,
            completion_audit: audit,
            audit_asked,
            resolved: scenario,
        })
    }

    /// Sum of the durations of the measured phases (the throughput window).
    pub fn measured_duration(&self) -> Duration {
        self.phases
            .iter()
            .filter(|p| p.measured)
            .map(|p| p.duration)
            .sum()
    }

    /// The resolved scenario as TOML, with any password in `database.url` masked.
    pub fn resolved_toml(&self) -> String {
        let mut s = self.resolved.clone();
        if let Some(url) = &s.database.url {
            s.database.url = Some(crate::redact::redact_url(url));
        }
        toml::to_string_pretty(&s)
            .unwrap_or_else(|e| format!("# could not serialize the scenario: {e}\n"))
    }
}

/// Whether the completion audit runs: unset, where the engine keeps one (a `true` it cannot
/// keep was refused with the engine's needs); written back for the resolved scenario.
fn settle_audit(scenario: &mut Scenario) -> bool {
    let audit = scenario.verify.completion_audit.unwrap_or(true)
        && scenario.database.engine.supports().completion_audit;
    scenario.verify.completion_audit = Some(audit);
    audit
}

/// Whether workers run as processes: as the key says, else as processes where the engine's
/// client may crash its process (unless a `crash_workers` fault needs them in the runner).
/// Written back, so that `scenario.resolved.toml` says what ran.
fn settle_processes(scenario: &mut Scenario) {
    let crashes_tasks = scenario
        .phases
        .iter()
        .flat_map(|p| &p.faults)
        .any(|f| matches!(f, crate::scenario::faults::FaultSpec::CrashWorkers { .. }));
    let default = scenario.database.engine.facts().client_may_crash && !crashes_tasks;
    scenario.consumers.processes = Some(scenario.consumers.processes.unwrap_or(default));
}

/// Writes what validation resolved back into the scenario, so that `scenario.resolved.toml`
/// says what ran (and loads again to the same plan): the image, a URL from the environment,
/// the claim batch, the custom directory as an absolute path.
fn fill_resolved(scenario: &mut Scenario, database: &DatabasePlan, queue: &QueuePlan) {
    scenario.database.image = Some(database.image.clone());
    // Masked wherever the resolved scenario is written (`Plan::resolved_toml`).
    scenario.database.url = database.url.clone();
    if queue.variant.name.claims_in_batches() {
        scenario.queue.claim_batch = Some(queue.variant.claim_batch);
    }
    if let Some(dir) = &queue.variant.dir {
        scenario.queue.dir = Some(dir.clone());
    }
    // A library's workers are processes of their own and claim by its rules: the resolved
    // scenario says so rather than a claim mode nothing used.
    if queue.variant.workers.is_some() {
        scenario.consumers.processes = Some(true);
        scenario.consumers.claim_mode = None;
    }
}

/// Every threshold, the scenario's and each phase's.
fn threshold_list(scenario: &Scenario, source: &str) -> Result<Vec<Threshold>, InputError> {
    let err = |key: &str, reason: String| InputError::new(source, key, reason);
    let mut thresholds = Vec::new();
    for (metric, condition) in &scenario.thresholds {
        thresholds.push(
            thresholds::parse(metric, condition, None)
                .map_err(|r| err(&format!("thresholds[\"{metric}\"]"), r))?,
        );
    }
    for (i, ph) in scenario.phases.iter().enumerate() {
        for (metric, condition) in &ph.thresholds {
            let t = thresholds::parse(metric, condition, Some(&ph.name));
            thresholds
                .push(t.map_err(|r| err(&format!("phases[{i}].thresholds[\"{metric}\"]"), r))?);
        }
    }
    Ok(thresholds)
}

/// The highest offered rate a scenario may ask for, jobs/s.
const MAX_RATE: f64 = 1_000_000.0;
/// The most jobs a prefill may insert (10 min of the fastest queue measured here, many times
/// over; the harness's memory is flat, the table's is not).
const MAX_PREFILL: u64 = 100_000_000;

/// Upper bounds on values that have no natural one, so that no accepted value overflows
/// the run's arithmetic or asks for a run that never ends.
fn check_limits(scenario: &Scenario) -> Result<(), (String, String)> {
    let at_most = |key: &str, d: Duration, max: Duration, shown: &str| {
        (d > max).then(|| (key.to_string(), format!("must be at most {shown}")))
    };
    let p = &scenario.producers;
    let c = &scenario.consumers;
    let durations = [
        at_most(
            "database.startup_timeout",
            scenario.database.startup_timeout.0,
            HOUR,
            "1h",
        ),
        at_most("producers.late_after", p.late_after.0, HOUR, "1h"),
        at_most("consumers.poll_interval", c.poll_interval.0, HOUR, "1h"),
        at_most("consumers.restart_after", c.restart_after.0, HOUR, "1h"),
        at_most("drain.timeout", scenario.drain.timeout.0, 24 * HOUR, "24h"),
        at_most("reaper.interval", scenario.reaper.interval.0, HOUR, "1h"),
        at_most(
            "reaper.stale_after",
            scenario.reaper.stale_after.0,
            24 * HOUR,
            "24h",
        ),
        at_most("sampler.interval", scenario.sampler.interval.0, HOUR, "1h"),
        scenario
            .reaper
            .stale_after
            .0
            .is_zero()
            .then(|| ("reaper.stale_after".into(), "must be more than 0s".into())),
    ];
    if let Some(e) = durations.into_iter().flatten().next() {
        return Err(e);
    }
    if p.prefill > MAX_PREFILL {
        return Err((
            "producers.prefill".into(),
            format!("must be at most {MAX_PREFILL}, got {}", p.prefill),
        ));
    }
    let rates = std::iter::once(("producers.rate".to_string(), p.rate)).chain(
        scenario
            .phases
            .iter()
            .enumerate()
            .map(|(i, ph)| (format!("phases[{i}].rate"), ph.rate)),
    );
    for (key, rate) in rates {
        if let Some(Rate::PerSecond(r)) = rate
            && r > MAX_RATE
        {
            return Err((key, format!("must be at most {MAX_RATE} jobs/s, got {r:e}")));
        }
    }
    Ok(())
}

/// A mix of weights: at least one above 0, and a total a job draw can add up.
fn check_weights(weights: impl Iterator<Item = u32>, what: &str) -> Result<(), String> {
    let total = weights.map(u64::from).sum::<u64>();
    if total == 0 {
        return Err(format!("needs at least one {what} with a weight above 0"));
    }
    if total > u64::from(u32::MAX) {
        return Err(format!(
            "the weights add up to {total}; their total must be at most {}",
            u32::MAX
        ));
    }
    Ok(())
}

fn check_count(n: u32, key: &str, source: &str) -> Result<(), InputError> {
    if !(1..=1000).contains(&n) {
        return Err(InputError::new(
            source,
            key,
            format!("must be between 1 and 1000, got {n}"),
        ));
    }
    Ok(())
}

fn check_dist(d: &DurationDist, source: &str) -> Result<(), InputError> {
    let key = "consumers.handler.duration";
    let fail = |reason: &str| Err(InputError::new(source, key, reason.to_string()));
    match *d {
        DurationDist::Fixed(x) if x.0 > HOUR => fail("must be at most 1h"),
        DurationDist::Uniform { min, max } if min > max => fail("uniform needs min <= max"),
        DurationDist::Uniform { max, .. } if max.0 > HOUR => fail("must be at most 1h"),
        DurationDist::Exponential { mean } if mean.0.is_zero() || mean.0 > HOUR => {
            fail("exponential needs a mean above 0s and at most 1h")
        }
        DurationDist::Lognormal { median, sigma }
            if median.0.is_zero() || median.0 > HOUR || !(0.0..=10.0).contains(&sigma) =>
        {
            fail("lognormal needs a median above 0s and at most 1h, and sigma between 0 and 10")
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load::{Overrides, parse};

    const BASE: &str =
        "[producers]\nrate = 100\n[[phases]]\nname = \"steady\"\nduration = \"5s\"\n";

    fn build(extra: &str) -> Result<Plan, InputError> {
        let text = format!("{extra}\n{BASE}");
        let s = parse("s.toml", &text, &Overrides::default())?;
        Plan::build(s, "s.toml", "s", &EnvDefaults::default())
    }

    #[test]
    fn defaults_resolve() {
        let plan = build("").unwrap();
        assert_eq!(plan.name, "s");
        assert_eq!(plan.phases[0].rate, Rate::PerSecond(100.0));
        assert_eq!(plan.database.image, "postgres:17");
        assert_eq!(plan.consumers.poll_interval, Duration::from_secs(1));
        assert_eq!(plan.queue.max_retries, 3);
        // The resolved scenario records what was filled in, and loads again.
        let text = plan.resolved_toml();
        assert!(text.contains("seed = "), "{text}");
        let again = parse("r.toml", &text, &Overrides::default()).unwrap();
        assert_eq!(again.seed, Some(plan.seed));
    }

    #[test]
    fn workers_are_processes_where_the_engines_client_may_crash_unless_the_key_or_a_fault_says() {
        let plan_of = |engine: &str, consumers: &str, fault: &str| {
            let text = format!(
                "[database]\nengine = \"{engine}\"\n[consumers]\n{consumers}\n[producers]\nrate = 100\n\
                 [[phases]]\nname = \"steady\"\nduration = \"5s\"\n{fault}"
            );
            let s = parse("s.toml", &text, &Overrides::default()).unwrap();
            Plan::build(s, "s.toml", "s", &EnvDefaults::default()).unwrap()
        };
        let crash = "[[phases.faults]]\nkind = \"crash_workers\"\nevery = \"1s\"";
        let kafka = plan_of("kafka", "", "");
        assert!(kafka.consumers.processes);
        // Written back: the resolved scenario says what ran.
        assert!(kafka.resolved_toml().contains("processes = true"));
        assert!(!plan_of("kafka", "", crash).consumers.processes);
        assert!(
            !plan_of("kafka", "processes = false", "")
                .consumers
                .processes
        );
        assert!(!plan_of("postgres", "", "").consumers.processes);
        assert!(
            plan_of("postgres", "processes = true", "")
                .consumers
                .processes
        );
    }

    #[test]
    fn semantic_errors_name_their_key() {
        let cases = [
            ("[consumers]\ncount = 0", "consumers.count"),
            (
                "[consumers.handler]\nerror_rate = 1.5",
                "consumers.handler.error_rate",
            ),
            (
                "[consumers.handler]\nduration = { uniform = { min = \"5ms\", max = \"1ms\" } }",
                "consumers.handler.duration",
            ),
            (
                "[consumers.handler.slow]\nfraction = 0\nduration = \"2s\"",
                "consumers.handler.slow.fraction",
            ),
            (
                "[consumers.handler.slow]\nfraction = 0.5\nduration = \"2h\"",
                "consumers.handler.slow.duration",
            ),
            (
                "[consumers]\npoll_interval = \"0s\"",
                "consumers.poll_interval",
            ),
            (
                "[database.settings]\n\"shared buffers\" = \"1GB\"",
                "database.settings.shared buffers",
            ),
            ("[database]\nprovider = \"url\"", "database.url"),
            ("[queue]\nmax_retries = -1", "queue.max_retries"),
            (
                "[producers.priorities]\nhigh = 1",
                "producers.priorities.high",
            ),
            ("[database]\nurl = \"mysql//x\"", "database.url"),
            ("[database]\nurl = \"mysql://u@h/db\"", "database.url"),
            (
                "[queue.backoff]\nbase = \"1s\"\ncap = \"10ms\"",
                "queue.backoff.cap",
            ),
        ];
        for (extra, key) in cases {
            let e = build(extra).unwrap_err();
            assert_eq!(e.key.as_deref(), Some(key), "{extra}: {e}");
            assert_eq!(e.source, "s.toml");
        }
    }

    #[test]
    fn phases_need_a_rate_and_a_measured_window() {
        let s = parse(
            "s.toml",
            "[[phases]]\nname = \"a\"\nduration = \"1s\"\n",
            &Overrides::default(),
        )
        .unwrap();
        let e = Plan::build(s, "s.toml", "s", &EnvDefaults::default()).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("phases[0].rate"));
        let s = parse(
            "s.toml",
            "[[phases]]\nname = \"a\"\nduration = \"1s\"\nrate = 5\nmeasured = false\n",
            &Overrides::default(),
        )
        .unwrap();
        let e = Plan::build(s, "s.toml", "s", &EnvDefaults::default()).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("phases"));
    }
}
