//! The phases' plans: each phase's duration, rate and faults, checked against the fleets.

use super::*;

#[derive(Debug, Clone)]
pub struct PhasePlan {
    pub name: String,
    pub duration: Duration,
    pub rate: Rate,
    pub measured: bool,
    pub faults: Vec<FaultSpec>,
}

/// `[[phases]]`, checked; each phase without a rate takes `default_rate` (producers.rate),
/// written back so the resolved scenario shows it.
pub(super) fn phase_plans(
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

/// How a repeated fault is scheduled in a phase lasting `phase`, checked; `both`: it gave
/// `every` and `rate` both.
pub(super) fn check_repeat(
    repeat: Option<Repeat>,
    both: bool,
    phase: Duration,
) -> Result<(), String> {
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

/// Validates one fault of a phase lasting `phase`, `to_the_end` from its start to the end
/// of the load; the error is the reason.
pub(super) fn check_fault(
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
        FaultSpec::PauseWorkers { after, hold } => {
            if after.0 >= phase {
                return Err("after must fall inside the phase".into());
            }
            if hold.0.is_zero() || hold.0 > HOUR {
                return Err("for must be more than 0s and at most 1h".into());
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
