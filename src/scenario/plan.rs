//! The plan: a scenario after validation, with every default and inherited value resolved.
//! Everything downstream of `scenario` takes a `Plan`, never TOML.

use super::faults::{FaultSpec, Repeat};
use super::model::{
    Arrival, BystanderSection, ConsumersSection, DatabaseSection, PhaseSection, ProducersSection,
    ProviderKind, Scenario,
};
use super::thresholds::{self, Threshold};
use super::values::{DurationDist, Rate};
use crate::backend::engine::{Engine, Supports};
use crate::backend::queue::{
    CUSTOM_REQUIRED_FILES, ClaimMode, Finish, QueuePlan, VariantName, VariantPlan,
};
use crate::error::InputError;
use crate::named_params::{ClaimParam, MarkParam, takes};
use serde::{Deserialize, Serialize};
use std::time::Duration;

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
    pub sampler_interval: Duration,
    /// Thresholds on the whole run and on phases.
    pub thresholds: Vec<Threshold>,
    /// The bystander's load, when it is on.
    pub bystander: Option<BystanderPlan>,
    /// The scenario with all defaults filled in, as saved to `scenario.resolved.toml`.
    pub resolved: Scenario,
}

/// A bystander's load (`[bystander]`): statements per second on `rows` rows, measured alone
/// for `quiet` first.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BystanderPlan {
    pub rate: f64,
    pub rows: u32,
    pub quiet: Duration,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DatabasePlan {
    pub engine: Engine,
    pub provider: ProviderKind,
    pub image: String,
    pub url: Option<String>,
    pub startup_timeout: Duration,
    /// Validated `name = value` server settings.
    pub settings: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
pub struct ProducerPlan {
    /// Connections opened at the start (closed loop: the producers).
    pub count: usize,
    /// Open loop: the most connections the fleet may grow to when every one is busy.
    pub max_count: usize,
    pub arrival: Arrival,
    pub prefill: u64,
    pub payload_bytes: usize,
    pub job_types: Vec<(String, u32)>,
    pub priorities: Vec<(i32, u32)>,
    pub late_after: Duration,
    /// Fraction of jobs whose handler always fails.
    pub poison_fraction: f64,
    /// Fraction of jobs whose handler always crashes its worker.
    pub crash_fraction: f64,
    /// Enqueue inside a business transaction (the seed's outbox), when set.
    pub outbox: Option<OutboxPlan>,
}

#[derive(Debug, Clone, Copy)]
pub struct OutboxPlan {
    pub rollback_rate: f64,
    /// Rows created in `orders` before the load: at least one per job the phases schedule.
    pub orders: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConsumerPlan {
    pub count: usize,
    pub poll_interval: Duration,
    pub claim_mode: ClaimMode,
    pub processes: bool,
    pub restart_after: Duration,
    pub handler: HandlerPlan,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct HandlerPlan {
    pub duration: DurationDist,
    pub error_rate: f64,
    /// Keep the worker's thread busy for the duration instead of sleeping.
    pub cpu_bound: bool,
}

#[derive(Debug, Clone, Copy)]
pub struct ReaperPlan {
    pub interval: Duration,
    pub stale_after: Duration,
    pub count_as_attempt: bool,
}

#[derive(Debug, Clone)]
pub struct PhasePlan {
    pub name: String,
    pub duration: Duration,
    pub rate: Rate,
    pub measured: bool,
    pub faults: Vec<FaultSpec>,
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
        let consumers = consumer_plan(&scenario.consumers, scenario.database.engine, source)?;
        check_design_claims(&queue, &consumers, &scenario.reaper)
            .map_err(|(key, reason)| err(key, reason))?;
        let default_rate = scenario.producers.rate;
        let phases = phase_plans(
            &mut scenario.phases,
            default_rate,
            consumers.processes,
            source,
        )?;
        let r = &scenario.reaper;
        if r.enabled && r.interval.0 < Duration::from_millis(10) {
            return Err(err("reaper.interval", "must be at least 10ms".into()));
        }
        let reaper = r.enabled.then_some(ReaperPlan {
            interval: r.interval.0,
            stale_after: r.stale_after.0,
            count_as_attempt: r.count_as_attempt,
        });
        producers.outbox = outbox_plan(&scenario.producers, &phases, source)?;
        let thresholds = threshold_list(&scenario, source)?;
        if scenario.sampler.interval.0 < Duration::from_millis(100) {
            return Err(err("sampler.interval", "must be at least 100ms".into()));
        }
        if scenario.drain.timeout.0.is_zero() {
            return Err(err("drain.timeout", "must be more than 0s".into()));
        }
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
            completion_audit: scenario.verify.completion_audit
                && scenario.database.engine.supports().completion_audit,
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
}

/// How a repeated fault is scheduled in a phase lasting `phase`, checked; `both`: it gave
/// `every` and `rate` both.
fn check_repeat(repeat: Option<Repeat>, both: bool, phase: Duration) -> Result<(), String> {
    match repeat {
        Some(Repeat::Every(d)) if d < Duration::from_millis(10) => {
            Err("every must be at least 10ms".into())
        }
        Some(Repeat::Every(d)) if d >= phase => Err(format!(
            "every must be shorter than its phase ({}): it first fires one period after the phase starts, so it never would",
            humantime::format_duration(phase)
        )),
        Some(Repeat::Rate(r)) if !(r > 0.0 && r <= 1000.0) => Err(format!(
            "rate must be above 0 and at most 1000 per second, got {r}"
        )),
        Some(_) => Ok(()),
        None if both => Err("give every or rate, not both".into()),
        None => Err("give every (e.g. \"2s\") or rate (per second)".into()),
    }
}

/// The bystander's load (`None` unless `enabled`), checked; an error names its key.
fn bystander_plan(b: &BystanderSection) -> Result<Option<BystanderPlan>, (&'static str, String)> {
    if !(b.rate.is_finite() && (1.0..=10_000.0).contains(&b.rate)) {
        let reason = format!("must be between 1 and 10000 statements/s, got {}", b.rate);
        return Err(("rate", reason));
    }
    if !(1..=10_000_000).contains(&b.rows) {
        let reason = format!("must be between 1 and 10000000, got {}", b.rows);
        return Err(("rows", reason));
    }
    if b.quiet.0 > Duration::from_secs(600) {
        return Err(("quiet", "must be at most 10m".into()));
    }
    Ok((b.enabled == Some(true)).then_some(BystanderPlan {
        rate: b.rate,
        rows: b.rows,
        quiet: b.quiet.0,
    }))
}

/// Validates one fault of a phase lasting `phase`, `to_the_end` from its start to the end
/// of the load; the error is the reason.
fn check_fault(
    f: &FaultSpec,
    (phase, to_the_end): (Duration, Duration),
    processes: bool,
) -> Result<(), String> {
    match f {
        FaultSpec::CrashWorkers {
            every, rate, count, ..
        }
        | FaultSpec::KillWorkers { every, rate, count }
        | FaultSpec::KillBackends {
            every, rate, count, ..
        } => {
            check_repeat(f.repeat(), every.is_some() && rate.is_some(), phase)?;
            if *count == 0 || *count > 1000 {
                return Err(format!("count must be between 1 and 1000, got {count}"));
            }
        }
        FaultSpec::FreezeWorkers { count, after, .. } => {
            if *count == 0 || *count > 1000 {
                return Err(format!("count must be between 1 and 1000, got {count}"));
            }
            if after.0 >= phase {
                return Err("after must fall inside the phase".into());
            }
        }
        FaultSpec::Analyze { after } if after.0 >= phase => {
            return Err("after must fall inside the phase".into());
        }
        FaultSpec::RestartServer {
            after, down_for, ..
        } => {
            if after.0 >= phase {
                return Err("after must fall inside the phase".into());
            }
            if down_for.0 > HOUR {
                return Err("down_for must be at most 1h".into());
            }
        }
        FaultSpec::IdleInTransaction { hold: Some(d) }
        | FaultSpec::DelayVacuum { hold: Some(d) }
            if d.0.is_zero() || d.0 > to_the_end =>
        {
            return Err(format!(
                "for must be more than 0s and end with the load at the latest ({} after the phase starts)",
                humantime::format_duration(to_the_end)
            ));
        }
        FaultSpec::ActiveReaders { count } if *count == 0 || *count > 1000 => {
            return Err(format!("count must be between 1 and 1000, got {count}"));
        }
        FaultSpec::PoolExhaustion { connections } if *connections == 0 || *connections > 10_000 => {
            return Err(format!(
                "connections must be between 1 and 10000, got {connections}"
            ));
        }
        _ => {}
    }
    match f {
        FaultSpec::KillWorkers { .. } | FaultSpec::FreezeWorkers { .. } if !processes => {
            Err(format!(
                "{} needs worker processes: set consumers.processes = true",
                f.kind()
            ))
        }
        FaultSpec::CrashWorkers { .. } if processes => Err(
            "crash_workers crashes worker tasks; with consumers.processes = true use kill_workers"
                .into(),
        ),
        _ => Ok(()),
    }
}

/// `[database]`, checked: provider, image, URL and server settings.
fn database_plan(
    db: &DatabaseSection,
    env: &EnvDefaults,
    source: &str,
) -> Result<DatabasePlan, InputError> {
    let err = |key: &str, reason: String| InputError::new(source, key, reason);
    let mut settings = Vec::new();
    for (key, value) in &db.settings {
        let k = format!("database.settings.{key}");
        if !is_setting_name(key) {
            return Err(err(
                &k,
                "not a PostgreSQL setting name (letters, digits, _ and .)".into(),
            ));
        }
        if let Some(reason) = db.engine.foreign_setting(key) {
            return Err(err(&k, reason.into()));
        }
        let v = match value {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => if *b { "on" } else { "off" }.to_string(),
            _ => return Err(err(&k, "must be a string, number or boolean".into())),
        };
        if v.contains(['\n', '\r', '\0']) {
            return Err(err(&k, "must not contain line breaks".into()));
        }
        settings.push((key.clone(), v));
    }
    if db.image.as_deref().is_some_and(|i| i.trim().is_empty()) {
        return Err(err("database.image", "must not be empty".into()));
    }
    if db.startup_timeout.0.is_zero() {
        return Err(err(
            "database.startup_timeout",
            "must be more than 0s".into(),
        ));
    }
    let url = db.url.clone().or_else(|| env.database_url.clone());
    if let Some(u) = &url {
        db.engine.check_url(u).map_err(|reason| {
            err(
                "database.url",
                format!("{reason}; it came from --database-url, database.url or DATABASE_URL"),
            )
        })?;
    }
    if db.provider == ProviderKind::Url && url.is_none() {
        return Err(err(
            "database.url",
            "the url provider needs a server: pass --database-url, set database.url or DATABASE_URL".into(),
        ));
    }
    let database = DatabasePlan {
        engine: db.engine,
        provider: db.provider,
        image: db
            .image
            .clone()
            .or_else(|| env.image(db.engine).map(str::to_string))
            .or_else(|| Some(db.engine.facts().install.as_ref()?.image.to_string()))
            .unwrap_or_default(),
        url,
        startup_timeout: db.startup_timeout.0,
        settings,
    };
    Ok(database)
}

/// `[producers]`, checked (the outbox is sized later, from the phases).
fn producer_plan(p: &ProducersSection, source: &str) -> Result<ProducerPlan, InputError> {
    let err = |key: &str, reason: String| InputError::new(source, key, reason);
    check_count(p.count, "producers.count", source)?;
    if p.payload_bytes > 1 << 20 {
        return Err(err(
            "producers.payload_bytes",
            "must be at most 1048576 (1 MiB)".into(),
        ));
    }
    check_weights(p.job_types.values().copied(), "type")
        .map_err(|r| err("producers.job_types", r))?;
    for name in p.job_types.keys() {
        if name.contains('\0') {
            return Err(err(
                "producers.job_types",
                format!(
                    "the type name {name:?} holds a NUL character, which a database text column cannot store; use printable characters"
                ),
            ));
        }
        if name.is_empty() || name.chars().count() > 100 {
            return Err(err(
                &format!("producers.job_types.{name}"),
                "a type name is 1 to 100 characters (VARCHAR(100))".into(),
            ));
        }
    }
    let mut priorities = Vec::new();
    for (value, weight) in &p.priorities {
        let prio: i32 = value.trim().parse().map_err(|_| {
            err(
                &format!("producers.priorities.{value}"),
                "a priority must be an integer (the key), e.g. \"10\" = 1".into(),
            )
        })?;
        priorities.push((prio, *weight));
    }
    check_weights(priorities.iter().map(|(_, w)| *w), "priority")
        .map_err(|r| err("producers.priorities", r))?;
    if p.late_after.0.is_zero() {
        return Err(err("producers.late_after", "must be more than 0s".into()));
    }
    for (k, f) in [
        ("producers.poison_fraction", p.poison_fraction),
        ("producers.crash_fraction", p.crash_fraction),
    ] {
        if !(0.0..=1.0).contains(&f) {
            return Err(err(k, format!("must be between 0.0 and 1.0, got {f}")));
        }
    }
    if p.poison_fraction + p.crash_fraction > 1.0 {
        return Err(err(
            "producers.crash_fraction",
            "poison_fraction + crash_fraction must be at most 1.0".into(),
        ));
    }
    if !(0.0..=1.0).contains(&p.outbox.rollback_rate) {
        return Err(err(
            "producers.outbox.rollback_rate",
            format!(
                "must be between 0.0 and 1.0, got {}",
                p.outbox.rollback_rate
            ),
        ));
    }
    let producers = ProducerPlan {
        count: p.count as usize,
        max_count: max_producers(p, source)?,
        arrival: p.arrival,
        prefill: p.prefill,
        payload_bytes: p.payload_bytes as usize,
        job_types: p.job_types.iter().map(|(k, v)| (k.clone(), *v)).collect(),
        priorities,
        late_after: p.late_after.0,
        poison_fraction: p.poison_fraction,
        crash_fraction: p.crash_fraction,
        outbox: None,
    };
    Ok(producers)
}

/// `producers.max_count`, or its default: 4 × `count`, between 8 and 32, never fewer than
/// `count` (room for a slow insert without crowding the server's connection limit).
fn max_producers(p: &ProducersSection, source: &str) -> Result<usize, InputError> {
    let Some(max) = p.max_count else {
        return Ok((4 * p.count).clamp(8, 32).max(p.count) as usize);
    };
    check_count(max, "producers.max_count", source)?;
    if max < p.count {
        return Err(InputError::new(
            source,
            "producers.max_count",
            format!("must be at least producers.count ({}), got {max}", p.count),
        ));
    }
    Ok(max as usize)
}

/// What a design's claims ask of the scenario: Que's lock lasts the claim's transaction,
/// and a custom design without reap.sql has no reaper, so a committed claim of a crashed
/// worker could never come back.
fn check_design_claims(
    queue: &QueuePlan,
    consumers: &ConsumerPlan,
    reaper: &super::model::ReaperSection,
) -> Result<(), (&'static str, String)> {
    let committed = consumers.claim_mode == ClaimMode::Committed;
    if queue.variant.name == VariantName::AdvisoryLock && committed {
        return Err((
            "consumers.claim_mode",
            "the advisory_lock design's claim is a lock that ends with the claim's \
             transaction, so a claim committed before the work would leave the job free for \
             another worker: use claim_mode = \"in_transaction\""
                .into(),
        ));
    }
    if queue.variant.name == VariantName::VisibilityTimeout
        && committed
        && reaper.enabled
        && reaper.count_as_attempt
    {
        return Err((
            "reaper.count_as_attempt",
            "the visibility_timeout design has no reaper: a job whose worker died comes back \
             when its timeout runs out, and its read count is not capped (as in pgmq); use \
             count_as_attempt = false"
                .into(),
        ));
    }
    let Some(dir) = &queue.variant.dir else {
        return Ok(());
    };
    let has = |file: &str| dir.join(file).is_file();
    // A claim that hides its jobs for a visibility timeout recovers a lost worker's job by
    // itself, when the timeout runs out (the claim's text is checked in full at install).
    let read = |file: &str| std::fs::read_to_string(dir.join(file)).unwrap_or_default();
    let recovers_by_timeout = takes(&read("claim.sql"), ClaimParam::VisibilityTimeout)
        || takes(&read("mark_claimed.sql"), MarkParam::VisibilityTimeout);
    if committed && reaper.enabled && !has("reap.sql") && !recovers_by_timeout {
        return Err((
            "consumers.claim_mode",
            format!(
                "claims committed before the work need the design's reaper, and {} has no \
                 reap.sql: add one (with find_stale.sql on MariaDB; docs/designs.md lists both), \
                 hide claimed jobs for :visibility_timeout in claim.sql (mark_claimed.sql on \
                 MariaDB), or use claim_mode = \"in_transaction\"",
                dir.display()
            ),
        ));
    }
    if committed && reaper.enabled && reaper.count_as_attempt && !has("reap_counting.sql") {
        return Err((
            "reaper.count_as_attempt",
            format!(
                "counting reaps as attempts needs reap_counting.sql in {}, or count_as_attempt = false",
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// `[consumers]`, checked.
fn consumer_plan(
    c: &ConsumersSection,
    engine: Engine,
    source: &str,
) -> Result<ConsumerPlan, InputError> {
    let err = |key: &str, reason: String| InputError::new(source, key, reason);
    check_count(c.count, "consumers.count", source)?;
    if c.poll_interval.0 < Duration::from_millis(1) {
        return Err(err(
            "consumers.poll_interval",
            "must be at least 1ms (0 would spin on an empty queue)".into(),
        ));
    }
    let h = &c.handler;
    if !(0.0..=1.0).contains(&h.error_rate) {
        return Err(err(
            "consumers.handler.error_rate",
            format!("must be between 0.0 and 1.0, got {}", h.error_rate),
        ));
    }
    check_dist(&h.duration, source)?;
    let consumers = ConsumerPlan {
        count: c.count as usize,
        poll_interval: c.poll_interval.0,
        claim_mode: c
            .claim_mode
            .unwrap_or(match engine.supports().claim_in_transaction {
                true => ClaimMode::InTransaction,
                false => ClaimMode::Committed,
            }),
        processes: c.processes,
        restart_after: c.restart_after.0,
        handler: HandlerPlan {
            duration: h.duration,
            error_rate: h.error_rate,
            cpu_bound: h.cpu_bound,
        },
    };
    Ok(consumers)
}

/// `[[phases]]`, checked; each phase without a rate takes `default_rate` (producers.rate),
/// written back so the resolved scenario shows it.
fn phase_plans(
    sections: &mut [PhaseSection],
    default_rate: Option<Rate>,
    processes: bool,
    source: &str,
) -> Result<Vec<PhasePlan>, InputError> {
    let err = |key: &str, reason: String| InputError::new(source, key, reason);
    if sections.is_empty() {
        return Err(err(
            "phases",
            "at least one [[phases]] entry is required".into(),
        ));
    }
    // From each phase's start to the end of the load: how long a fault may outlast it.
    let to_the_end: Vec<Duration> = (0..sections.len())
        .map(|i| {
            sections[i..]
                .iter()
                .fold(Duration::ZERO, |d, p| d.saturating_add(p.duration.0))
        })
        .collect();
    let mut phases: Vec<PhasePlan> = Vec::new();
    for (i, ph) in sections.iter_mut().enumerate() {
        let key = |k: &str| format!("phases[{i}].{k}");
        if ph.name.trim().is_empty() {
            return Err(err(&key("name"), "must not be empty".into()));
        }
        if phases.iter().any(|p| p.name == ph.name) {
            return Err(err(
                &key("name"),
                format!("\"{}\" is used by an earlier phase", ph.name),
            ));
        }
        if ph.duration.0.is_zero() || ph.duration.0 > 24 * HOUR {
            return Err(err(
                &key("duration"),
                "must be more than 0s and at most 24h".into(),
            ));
        }
        let rate = ph.rate.or(default_rate).ok_or_else(|| {
            err(
                &key("rate"),
                "no offered rate: set it here or set producers.rate".into(),
            )
        })?;
        ph.rate = Some(rate);
        for (j, f) in ph.faults.iter().enumerate() {
            check_fault(f, (ph.duration.0, to_the_end[i]), processes)
                .map_err(|reason| err(&format!("phases[{i}].faults[{j}]"), reason))?;
        }
        phases.push(PhasePlan {
            name: ph.name.clone(),
            duration: ph.duration.0,
            rate,
            measured: ph.measured,
            faults: ph.faults.clone(),
        });
    }
    if !phases.iter().any(|p| p.measured) {
        return Err(err(
            "phases",
            "at least one phase must be measured (measured = true)".into(),
        ));
    }
    Ok(phases)
}

/// The outbox's orders table: one order row per job the phases can schedule (Poisson gaps
/// get a margin).
fn outbox_plan(
    p: &ProducersSection,
    phases: &[PhasePlan],
    source: &str,
) -> Result<Option<OutboxPlan>, InputError> {
    if !p.outbox.enabled {
        return Ok(None);
    }
    let mut jobs = 0.0;
    for (i, ph) in phases.iter().enumerate() {
        match ph.rate {
            Rate::PerSecond(r) => jobs += r * ph.duration.as_secs_f64(),
            Rate::Max => {
                return Err(InputError::new(
                    source,
                    format!("phases[{i}].rate"),
                    "the outbox needs an offered rate (not \"max\") to size its orders table",
                ));
            }
        }
    }
    Ok(Some(OutboxPlan {
        rollback_rate: p.outbox.rollback_rate,
        orders: (jobs * 1.5) as u64 + 1000 + 10 * u64::from(p.count),
    }))
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

fn is_setting_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '.')
}

/// `[queue.backoff]`, checked; the error names its key.
fn check_backoff(b: &crate::scenario::model::BackoffSection) -> Result<(), (&'static str, String)> {
    if !(b.factor.is_finite() && (1.0..=100.0).contains(&b.factor)) {
        return Err((
            "queue.backoff.factor",
            format!("must be between 1 and 100, got {}", b.factor),
        ));
    }
    if b.base.0 > 24 * HOUR || b.cap.is_some_and(|c| c.0 > 24 * HOUR) {
        return Err(("queue.backoff", "base and cap must be at most 24h".into()));
    }
    if let Some(cap) = b.cap
        && cap.0 < b.base.0
    {
        return Err((
            "queue.backoff.cap",
            format!(
                "must be at least the base ({}), got {}",
                humantime::format_duration(b.base.0),
                humantime::format_duration(cap.0)
            ),
        ));
    }
    Ok(())
}

/// One thing a scenario asks of its engine: the key that asks, what it is, and whether an
/// engine's row of the engine table has it.
struct Need {
    key: String,
    what: String,
    met: Box<dyn Fn(&Supports) -> bool>,
}

impl Need {
    fn new(key: &str, what: String, met: impl Fn(&Supports) -> bool + 'static) -> Need {
        Need {
            key: key.to_string(),
            what,
            met: Box::new(met),
        }
    }
}

/// Everything the scenario asks of its engine beyond the seed on PostgreSQL's terms.
fn needs(scenario: &Scenario) -> Vec<Need> {
    let q = &scenario.queue;
    let variant = q.variant.as_str();
    let mut needs = vec![Need::new(
        "queue.variant",
        format!("variant {variant} runs{}", q.variant.takes()),
        move |s| s.variants.contains(&variant),
    )];
    if q.fillfactor.is_some() {
        let what = "fillfactor is a table option".to_string();
        needs.push(Need::new("queue.fillfactor", what, |s| s.table_options));
    }
    if q.unlogged {
        let what = "unlogged is a table option".to_string();
        needs.push(Need::new("queue.unlogged", what, |s| s.table_options));
    }
    if q.stale_statistics {
        let what = "the queue table has planner statistics".to_string();
        needs.push(Need::new("queue.stale_statistics", what, |s| {
            s.planner_statistics
        }));
    }
    if q.rabbitmq_queue.is_some() {
        let what = "the kind of queue is chosen".to_string();
        needs.push(Need::new("queue.rabbitmq_queue", what, |s| {
            s.own_keys.contains(&"queue.rabbitmq_queue")
        }));
    }
    match scenario.consumers.claim_mode {
        Some(ClaimMode::InTransaction) => {
            let what = "a claim held in the worker's transaction".to_string();
            needs.push(Need::new("consumers.claim_mode", what, |s| {
                s.claim_in_transaction
            }));
        }
        Some(ClaimMode::Committed) => {
            let what = "a claim committed before the work".to_string();
            needs.push(Need::new("consumers.claim_mode", what, |s| {
                s.claim_committed
            }));
        }
        None => {}
    }
    if scenario.bystander.enabled == Some(true) {
        let what = "a bystander runs".to_string();
        needs.push(Need::new("bystander.enabled", what, |s| s.bystander));
    }
    if scenario.producers.outbox.enabled {
        let what = "the outbox scenario runs".to_string();
        needs.push(Need::new("producers.outbox.enabled", what, |s| s.outbox));
    }
    if !scenario.database.settings.is_empty() && scenario.database.provider == ProviderKind::Url {
        let what = "session settings on a url server are applied".to_string();
        needs.push(Need::new("database.settings", what, |s| {
            s.url_session_settings
        }));
    }
    for (i, phase) in scenario.phases.iter().enumerate() {
        for (j, f) in phase.faults.iter().enumerate() {
            let kind = f.kind();
            needs.push(Need::new(
                &format!("phases[{i}].faults[{j}].kind"),
                format!("fault {kind} runs"),
                move |s| s.faults.contains(&kind),
            ));
        }
    }
    needs
}

/// What the engine does not run, from its row of the engine table: the refusal names the
/// key, the engines that do run it, and what this engine offers instead.
fn check_engine(scenario: &Scenario) -> Result<(), (String, String)> {
    let engine = scenario.database.engine;
    let Some(unmet) = needs(scenario)
        .into_iter()
        .find(|n| !(n.met)(engine.supports()))
    else {
        return Ok(());
    };
    let on: Vec<&str> = Engine::ALL
        .iter()
        .filter(|e| (unmet.met)(e.supports()))
        .map(|e| e.label())
        .collect();
    Err((
        unmet.key,
        format!(
            "{} on {} only; with database.engine = \"{}\" {}",
            unmet.what,
            crate::backend::engine::and_list(&on),
            engine.as_str(),
            engine.offers()
        ),
    ))
}

/// The `[queue]` section, checked: the variant and its options, retries and backoff. What a
/// variant needs is asked of its kind; nothing is built or read here.
fn queue_plan(scenario: &Scenario, source: &str) -> Result<QueuePlan, InputError> {
    let err = |key: &str, reason: String| InputError::new(source, key, reason);
    let q = &scenario.queue;
    if !(0..=1000).contains(&q.max_retries) {
        return Err(err(
            "queue.max_retries",
            format!("must be between 0 and 1000, got {}", q.max_retries),
        ));
    }
    let b = &q.backoff;
    check_backoff(b).map_err(|(key, reason)| err(key, reason))?;
    let claim_batch = claim_batch_of(q).map_err(|r| err("queue.claim_batch", r))?;
    if let Some(ff) = q.fillfactor
        && !(10..=100).contains(&ff)
    {
        return Err(err(
            "queue.fillfactor",
            format!("must be between 10 and 100, got {ff}"),
        ));
    }
    let dir = custom_dir_of(q, source).map_err(|r| err("queue.dir", r))?;
    let visibility_timeout =
        visibility_timeout_of(q).map_err(|r| err("queue.visibility_timeout", r))?;
    let rotation_period = rotation_period_of(q).map_err(|r| err("queue.rotation_period", r))?;
    if q.variant == VariantName::Rotation && (q.fillfactor.is_some() || q.unlogged) {
        return Err(err(
            if q.unlogged {
                "queue.unlogged"
            } else {
                "queue.fillfactor"
            },
            "the rotation design's table is partitioned, and its partitions are truncated \
             rather than updated in place: leave fillfactor and unlogged out"
                .into(),
        ));
    }
    if q.variant.needs_audit() && !scenario.verify.completion_audit {
        return Err(err(
            "verify.completion_audit",
            format!(
                "the {} variant needs the completion audit: it is how the proof tells a completed job whose row was deleted from a lost one",
                q.variant.as_str()
            ),
        ));
    }
    if scenario.producers.outbox.enabled && q.variant.finish() != Finish::Update {
        return Err(err(
            "producers.outbox",
            format!(
                "the outbox check reads finished jobs from the queue table; the {} variant removes them (use seed, batch, notify, plain_index or custom)",
                q.variant.as_str()
            ),
        ));
    }
    let variant = VariantPlan {
        name: q.variant,
        claim_batch,
        visibility_timeout,
        rotation_period,
        dir,
        fillfactor: q.fillfactor,
        unlogged: q.unlogged,
        rabbitmq_queue: q.rabbitmq_queue.unwrap_or_default(),
    };
    Ok(QueuePlan {
        variant,
        max_retries: q.max_retries,
        backoff: b.into(),
        stale_statistics: q.stale_statistics,
    })
}

/// Jobs one claim takes: `queue.claim_batch` for the variants that claim in batches (batch:
/// 10 by default, custom: 1), 1 for the others.
fn claim_batch_of(q: &super::model::QueueSection) -> Result<u32, String> {
    let n = match (q.variant, q.claim_batch) {
        (VariantName::Batch, n) => n.unwrap_or(10),
        (VariantName::Custom, n) => n.unwrap_or(1),
        (_, None) => 1,
        (other, Some(_)) => {
            return Err(format!(
                "only the batch and custom variants claim in batches, not {}",
                other.as_str()
            ));
        }
    };
    if !(1..=10_000).contains(&n) {
        return Err(format!("must be between 1 and 10000, got {n}"));
    }
    Ok(n)
}

/// `queue.visibility_timeout`: for the designs with a claim that can take one.
fn visibility_timeout_of(q: &super::model::QueueSection) -> Result<Option<Duration>, String> {
    let Some(given) = q.visibility_timeout else {
        return Ok(None);
    };
    if !matches!(
        q.variant,
        VariantName::VisibilityTimeout | VariantName::Custom
    ) {
        return Err(format!(
            "the {} variant has no visibility timeout (visibility_timeout and custom designs do)",
            q.variant.as_str()
        ));
    }
    if given.0 < Duration::from_millis(100) {
        return Err(format!(
            "must be at least 100ms, got {given}; a claim would expire before its job ran"
        ));
    }
    Ok(Some(given.0))
}

/// `queue.rotation_period`: the rotation variant's only.
fn rotation_period_of(q: &super::model::QueueSection) -> Result<Duration, String> {
    match (q.variant, q.rotation_period) {
        (VariantName::Rotation, None) => Ok(Duration::from_secs(10)),
        (VariantName::Rotation, Some(p)) if p.0 < Duration::from_secs(1) => Err(format!(
            "must be at least 1s (the ticker runs once a second), got {p}"
        )),
        (VariantName::Rotation, Some(p)) => Ok(p.0),
        (_, None) => Ok(Duration::ZERO),
        (other, Some(_)) => Err(format!(
            "only the rotation variant rotates its tables, not {}",
            other.as_str()
        )),
    }
}

/// A `custom` variant's directory, resolved against the scenario file's and made absolute
/// (so the resolved scenario saved with the results names it wherever it is read), holding
/// every file the custom contract requires.
fn custom_dir_of(
    q: &super::model::QueueSection,
    source: &str,
) -> Result<Option<std::path::PathBuf>, String> {
    let given = match (q.variant, &q.dir) {
        (VariantName::Custom, None) => {
            return Err("the custom variant needs the directory of its .sql files".into());
        }
        (VariantName::Custom, Some(d)) => d,
        (other, Some(_)) => {
            return Err(format!(
                "only the custom variant reads a directory, not {}",
                other.as_str()
            ));
        }
        (_, None) => return Ok(None),
    };
    let base = std::path::Path::new(source)
        .parent()
        .unwrap_or(std::path::Path::new(""));
    let dir = base.join(given);
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    for name in CUSTOM_REQUIRED_FILES {
        let path = dir.join(name);
        match std::fs::metadata(&path) {
            Ok(m) if m.is_file() && m.len() > 0 => {}
            Ok(m) if m.is_file() => return Err(format!("{}: is empty", path.display())),
            _ => {
                return Err(format!(
                    "{}: is missing; a custom variant needs {}",
                    path.display(),
                    CUSTOM_REQUIRED_FILES.join(", ")
                ));
            }
        }
    }
    Ok(Some(dir))
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
