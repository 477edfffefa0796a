//! The fleets' plans: producers (and the outbox), consumers with their handler and the
//! reaper, and the bystander.

use super::*;

/// A bystander's load (`[bystander]`): statements per second on `rows` rows, measured alone
/// for `quiet` first.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BystanderPlan {
    pub rate: f64,
    pub rows: u32,
    pub quiet: Duration,
}

/// The bystander's load (`None` unless `enabled`), checked; an error names its key.
pub(super) fn bystander_plan(
    b: &BystanderSection,
) -> Result<Option<BystanderPlan>, (&'static str, String)> {
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
    /// A fraction of runs that take this long instead (`consumers.handler.slow`).
    pub slow: Option<SlowRuns>,
}

/// `consumers.handler.slow`, checked: a fraction in (0, 1] and a duration of at most 1 h.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SlowRuns {
    pub fraction: f64,
    pub duration: Duration,
}

impl HandlerPlan {
    /// How long a run takes on average, slow runs included.
    pub fn mean(&self) -> Duration {
        let usual = self.duration.mean();
        match self.slow {
            Some(s) => usual.mul_f64(1.0 - s.fraction) + s.duration.mul_f64(s.fraction),
            None => usual,
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct ReaperPlan {
    pub interval: Duration,
    pub stale_after: Duration,
    pub count_as_attempt: bool,
}

/// `[producers]`, checked (the outbox is sized later, from the phases).
pub(super) fn producer_plan(
    p: &ProducersSection,
    source: &str,
) -> Result<ProducerPlan, InputError> {
    let err = |key: &str, reason: String| InputError::new(source, key, reason);
    check_count(p.count, "producers.count", source)?;
    if p.payload_bytes > 1 << 20 {
        return Err(err(
            "producers.payload_bytes",
            "must be at most 1048576 (1 MiB)".into(),
        ));
    }
    check_job_types(p, &err)?;
    let priorities = priorities_of(p, &err)?;
    if p.late_after.0.is_zero() {
        return Err(err("producers.late_after", "must be more than 0s".into()));
    }
    check_fractions(p, &err)?;
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

type Refuse<'a> = &'a dyn Fn(&str, String) -> InputError;

/// `producers.job_types`: weights, and names a VARCHAR(100) text column can hold.
fn check_job_types(p: &ProducersSection, err: Refuse) -> Result<(), InputError> {
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
    Ok(())
}

/// `producers.priorities`: integer keys and their weights.
fn priorities_of(p: &ProducersSection, err: Refuse) -> Result<Vec<(i32, u32)>, InputError> {
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
    Ok(priorities)
}

/// The poison, crash and outbox rollback shares: each a fraction, poison and crash together
/// at most all jobs.
fn check_fractions(p: &ProducersSection, err: Refuse) -> Result<(), InputError> {
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
    Ok(())
}

/// `producers.max_count`, or its default: 4 × `count`, between 8 and 32, never fewer than
/// `count` (room for a slow insert without crowding the server's connection limit).
pub(super) fn max_producers(p: &ProducersSection, source: &str) -> Result<usize, InputError> {
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

/// `[consumers]`, checked.
pub(super) fn consumer_plan(
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
    let slow = h.slow.map(|s| slow_runs(s, source)).transpose()?;
    let consumers = ConsumerPlan {
        count: c.count as usize,
        poll_interval: c.poll_interval.0,
        claim_mode: c
            .claim_mode
            .unwrap_or(match engine.supports().claim_in_transaction {
                true => ClaimMode::InTransaction,
                false => ClaimMode::Committed,
            }),
        processes: c.processes.unwrap_or(false),
        restart_after: c.restart_after.0,
        handler: HandlerPlan {
            duration: h.duration,
            error_rate: h.error_rate,
            cpu_bound: h.cpu_bound,
            slow,
        },
    };
    Ok(consumers)
}

fn slow_runs(s: SlowRunsSection, source: &str) -> Result<SlowRuns, InputError> {
    let err = |key: &str, reason: String| Err(InputError::new(source, key, reason));
    if !(s.fraction > 0.0 && s.fraction <= 1.0) {
        return err(
            "consumers.handler.slow.fraction",
            format!("must be above 0.0 and at most 1.0, got {}", s.fraction),
        );
    }
    if s.duration.0 > HOUR {
        return err(
            "consumers.handler.slow.duration",
            format!("must be at most 1h, got {}", s.duration),
        );
    }
    Ok(SlowRuns {
        fraction: s.fraction,
        duration: s.duration.0,
    })
}

/// The outbox's orders table: one order row per job the phases can schedule (Poisson gaps
/// get a margin).
pub(super) fn outbox_plan(
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
