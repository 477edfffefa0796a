//! The search's answer, confirmed. The search measures short steps on one queue that has
//! already been through a vacuum cycle, so its figure is a capacity *between vacuums*: on a
//! fresh table autovacuum may not wake before dead tuples pile up. The confirmation offers
//! a rate on a fresh queue (a new schema on the same server) for long enough to span at
//! least two autovacuum cycles, judged window by window; a window that breaks the objective
//! ends the try.
//!
//! By default (`first_vacuum = "late"`) autovacuum is kept off each fresh table for one
//! `autovacuum_naptime` and then one VACUUM runs, paced as autovacuum's: the latest a fresh
//! table's first vacuum comes, so the answer does not depend on when the launcher happens to
//! visit. Where a whole confirmation is longer than that first naptime, *screens* of just the
//! first naptime find the rate to confirm ([`Ladder`]); then the whole confirmation runs, and
//! a whole confirmation that does not hold is stepped down (× [`STEP_DOWN`]).

use super::hold::{self, HoldEffect};
use super::search::REMEASURES;
use super::upset::{UPSET, Upset, UpsetEffect};
use super::{CapacityRequest, Step, judge_phase};
use crate::error::{Failure, InputError};
use crate::provider::Server;
use crate::report::Summary;
use crate::report::design::DesignRecord;
use crate::run::{RunOptions, Session};
use crate::scenario::{
    Confirm, FaultSpec, FirstVacuum, HumanDuration, PhaseSection, Plan, PlanChange, Rate,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A whole confirmation that did not hold is tried again at this share of its rate.
pub const STEP_DOWN: f64 = 0.85;
/// A screen that did not hold, with none held yet, is tried again at this share.
pub const SCREEN_DOWN: f64 = 0.6;
/// A screen that held, with none broken yet, is tried again at this multiple: the search's
/// figure is a capacity between vacuums, on a queue earlier steps have worked, and a fresh
/// queue may hold more.
pub const SCREEN_UP: f64 = 1.25;
/// Screens bisect until the lowest rate that broke is within this factor of the highest
/// that held. Finer is not worth its minutes: near the limit, rates 10% apart held and broke
/// by turns in measurements here (a tail stall decides a window's p99).
pub const SCREEN_PRECISION: f64 = 1.15;
/// The shortest confirmation `auto` chooses.
const AT_LEAST: Duration = Duration::from_secs(180);
/// A fresh table's first stretch without a vacuum when the server names no naptime.
const NAPTIME_UNKNOWN: Duration = Duration::from_secs(60);
/// How long a confirmation's queue may drain after its last window.
const DRAIN: Duration = Duration::from_secs(10);
/// About how long each judged window of a confirmation is.
const WINDOW: Duration = Duration::from_secs(30);

/// How a confirmation went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Confirmation {
    /// How long a whole try held its rate (the judged windows together), seconds.
    pub held_for_s: f64,
    /// Why that long: `3 × autovacuum_naptime (60s)`, or the scenario's setting.
    pub basis: String,
    /// When each fresh table got its first vacuum (absent in results of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_vacuum: Option<FirstVacuum>,
    /// How long a screen's judged windows last: the fresh table's first naptime, seconds.
    #[serde(default)]
    pub screen_s: f64,
    /// With `capacity.hold_horizon`: how long the horizon was to be held after the clean
    /// windows, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_horizon_s: Option<f64>,
    pub tries: Vec<Try>,
    /// Tries measured again because the load machine stalled in the window that broke.
    #[serde(default)]
    pub remeasured: u32,
    /// The load machine stalled in a try and in every measurement of it again: the
    /// confirmation stopped there, and the answer is the last rate that held cleanly.
    #[serde(default)]
    pub load_machine_limited: bool,
    /// The upset every whole try carried once its queue had settled (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upset: Option<Upset>,
    /// Fresh queues a rate must hold on, every one, to be confirmed (1 in results of older
    /// versions).
    #[serde(default = "one")]
    pub runs: u32,
}

fn one() -> u32 {
    1
}

impl Confirmation {
    /// The highest rate that held through a whole confirmation (and recovered from its
    /// upset) on `runs` fresh queues and broke on none, if one did.
    pub fn confirmed_per_s(&self) -> Option<f64> {
        self.tries
            .iter()
            .filter(|t| !t.screen && t.held)
            .map(|t| t.rate)
            .filter(|r| self.held_at(*r) >= self.runs && self.broke_at(*r) == 0)
            .reduce(f64::max)
    }

    /// Whole tries at `rate` that held.
    pub fn held_at(&self, rate: f64) -> u32 {
        let at = |t: &&Try| !t.screen && t.rate == rate && !t.disturbed;
        self.tries.iter().filter(at).filter(|t| t.held).count() as u32
    }

    /// Whole tries at `rate` that did not hold (the load machine's disturbances aside).
    pub fn broke_at(&self, rate: f64) -> u32 {
        let at = |t: &&Try| !t.screen && t.rate == rate && !t.disturbed;
        self.tries.iter().filter(at).filter(|t| !t.held).count() as u32
    }

    /// The highest rate whose screen held.
    pub fn screened_per_s(&self) -> Option<f64> {
        self.tries
            .iter()
            .filter(|t| t.held && t.screen)
            .map(|t| t.rate)
            .reduce(f64::max)
    }
}

/// One rate offered on a fresh queue, window after window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Try {
    pub rate: f64,
    /// A screen: only the fresh table's first naptime, to find the rate to confirm.
    #[serde(default)]
    pub screen: bool,
    /// Every window met the objective.
    pub held: bool,
    /// How long each window is, seconds.
    pub window_s: f64,
    /// The windows, judged as the search judges its steps, with what the database did.
    pub windows: Vec<Step>,
    /// The window that broke did so while the load machine stalled: the try is measured
    /// again at the same rate, not judged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disturbed: bool,
    /// With `capacity.hold_horizon`: the windows while the horizon was held and after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<HoldEffect>,
    /// A whole try's upset, once the try got that far: what it did, whether the queue
    /// recovered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upset: Option<UpsetEffect>,
    /// The upset's own windows (measured, not judged).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub upset_windows: Vec<Step>,
    pub dir: PathBuf,
}

/// How a confirmation runs on this server.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    /// How long a whole try holds its rate.
    pub held: Duration,
    /// Why that long, and when the first vacuum comes.
    pub basis: String,
    /// A fresh table's first stretch without a vacuum: one `autovacuum_naptime`, at most
    /// `held`. A screen lasts this long.
    pub first_naptime: Duration,
    pub first_vacuum: FirstVacuum,
}

impl Schedule {
    /// Screens pay off where a whole try is longer than one.
    fn screens(&self) -> bool {
        self.held > self.first_naptime
    }
}

/// How a confirmation runs: `None` when it is off.
pub fn schedule(
    setting: Confirm,
    first_vacuum: FirstVacuum,
    server: &BTreeMap<String, String>,
) -> Option<Schedule> {
    let naptime = server
        .get("autovacuum_naptime")
        .and_then(|v| humantime::parse_duration(v).ok());
    let (held, basis) = match setting {
        Confirm::Off => return None,
        Confirm::For(d) => (d.0, format!("capacity.confirm = \"{d}\"")),
        Confirm::Auto => auto(naptime),
    };
    let first_naptime = naptime.unwrap_or(NAPTIME_UNKNOWN).min(held);
    let basis = match first_vacuum {
        FirstVacuum::Late => format!(
            "{basis}; its first vacuum after {}, as late as autovacuum comes",
            HumanDuration(first_naptime)
        ),
        FirstVacuum::Whenever => format!("{basis}; its first vacuum whenever autovacuum came"),
    };
    Some(Schedule {
        held,
        basis,
        first_naptime,
        first_vacuum,
    })
}

/// The larger of [`AT_LEAST`] and 3 × the server's autovacuum_naptime.
fn auto(naptime: Option<Duration>) -> (Duration, String) {
    match naptime {
        Some(n) if 3 * n > AT_LEAST => (3 * n, format!("3 × autovacuum_naptime ({n:?})")),
        Some(n) => (
            AT_LEAST,
            format!("3 min, at least 3 × autovacuum_naptime ({n:?})"),
        ),
        None => (
            AT_LEAST,
            "3 min (the server has no autovacuum_naptime)".into(),
        ),
    }
}

/// What a confirmation tries next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Next {
    /// A screen of the first naptime at this rate.
    Screen(f64),
    /// A whole confirmation at this rate.
    Whole(f64),
}

/// The rates a confirmation tries: screens from the search's figure up (× [`SCREEN_UP`])
/// while they hold, or down (× [`SCREEN_DOWN`]) until one holds, then bisected until the
/// highest that held is within [`SCREEN_PRECISION`] of the lowest that broke; a whole
/// confirmation at the highest that held, stepped down (× [`STEP_DOWN`]) while whole
/// confirmations break. Without screens, whole confirmations from the search's figure down.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Ladder {
    held: Option<f64>,
    broke: Option<f64>,
    /// Screens offer no more than this (the search's `max_rate`).
    ceiling: f64,
}

impl Ladder {
    pub fn new(ceiling: f64) -> Ladder {
        Ladder {
            ceiling,
            ..Ladder::default()
        }
    }

    /// The first try at the search's figure.
    pub fn first(found: f64, screens: bool) -> Next {
        if screens {
            Next::Screen(found)
        } else {
            Next::Whole(found)
        }
    }

    /// The try after `tried`, which `held` or not; `None` once a whole confirmation held or
    /// no lower rate of at least 1 job/s is left.
    pub fn after(&mut self, tried: Next, held: bool) -> Option<Next> {
        // A step down must offer less, and at least 1 job/s.
        let down = |r: f64, share: f64| Some((r * share).round()).filter(|d| *d >= 1.0 && *d < r);
        match (tried, held) {
            (Next::Whole(_), true) => None,
            (Next::Whole(r), false) => down(r, STEP_DOWN).map(Next::Whole),
            (Next::Screen(r), true) => {
                self.held = Some(r);
                Some(self.between(r))
            }
            (Next::Screen(r), false) => {
                self.broke = Some(r);
                match self.held {
                    None => down(r, SCREEN_DOWN).map(Next::Screen),
                    Some(held) => Some(self.between(held)),
                }
            }
        }
    }

    /// With one try left, a screen would leave nothing confirmed: the whole confirmation at
    /// the highest screen that held instead.
    pub fn last_chance(&self, next: Next) -> Next {
        match (next, self.held) {
            (Next::Screen(_), Some(held)) => Next::Whole(held),
            _ => next,
        }
    }

    /// After a screen held: a screen above it while none broke (up to the ceiling), a
    /// screen between it and the lowest that broke, or the whole confirmation at it.
    fn between(&self, held: f64) -> Next {
        let Some(broke) = self.broke else {
            let up = (held * SCREEN_UP).round().min(self.ceiling);
            return match up > held {
                true => Next::Screen(up),
                false => Next::Whole(held),
            };
        };
        let mid = (held * broke).sqrt().round();
        if broke / held <= SCREEN_PRECISION || mid <= held || mid >= broke {
            Next::Whole(held)
        } else {
            Next::Screen(mid)
        }
    }
}

/// `total` cut into windows of about [`WINDOW`], named `{prefix}1`, `{prefix}2`, …
fn windows(prefix: &str, total: Duration) -> Vec<(String, Duration)> {
    let count = (total.as_secs_f64() / WINDOW.as_secs_f64()).ceil() as u32;
    let count = count.clamp(1, 120);
    (1..=count)
        .map(|i| (format!("{prefix}{i}"), total / count))
        .collect()
}

impl CapacityRequest {
    /// The plan of a try at `rate`: a warm-up, then windows of about [`WINDOW`] filling the
    /// try (a screen: the first naptime; a whole try: `schedule.held`), each measured and
    /// carrying the objective. With `first_vacuum = "late"` the warm-up carries the fault that
    /// keeps autovacuum off the table until the first naptime has passed. A whole try with a
    /// held horizon goes on with its windows (also judged) and the recovery windows
    /// (measured only). The drain is short: a rate that held leaves little to drain, and one
    /// that did not leaves a backlog on a queue that is dropped anyway (its jobs are proved
    /// unfinished, not lost).
    pub fn confirm_plan(&self, rate: f64, s: &Schedule, screen: bool) -> Result<Plan, InputError> {
        let offered = rate;
        let rate = Some(Rate::PerSecond(rate));
        let phase = |(name, duration): (String, Duration), measured, slo: bool| PhaseSection {
            name,
            duration: HumanDuration(duration),
            rate,
            measured,
            faults: Vec::new(),
            thresholds: if slo {
                self.search.slo.clone()
            } else {
                BTreeMap::new()
            },
        };
        let mut phases = vec![phase(("warmup".into(), self.search.warmup), false, false)];
        if s.first_vacuum == FirstVacuum::Late {
            let until = HumanDuration(self.search.warmup + s.first_naptime);
            phases[0]
                .faults
                .push(FaultSpec::DelayVacuum { hold: Some(until) });
        }
        let length = if screen { s.first_naptime } else { s.held };
        let upset = Some(self.search.upset).filter(|u| u.is_on() && !screen);
        let mut judged = windows("window-", length);
        if upset.is_some() && judged.len() == 1 {
            // The upset comes once the queue has settled: after a first window.
            judged = ["window-1", "window-2"]
                .map(|n| (n.into(), length / 2))
                .to_vec();
        }
        for (i, w) in judged.into_iter().enumerate() {
            if let (1, Some(u)) = (i, upset) {
                phases.extend(u.phases(offered));
            }
            phases.push(phase(w, true, true));
        }
        if let (Some(hold), false) = (self.search.hold_horizon, screen) {
            let first = phases.len();
            phases.extend(
                windows(hold::HELD, hold)
                    .into_iter()
                    .map(|w| phase(w, true, true)),
            );
            phases[first].faults.push(hold::fault(hold));
            let after = windows(hold::RECOVERY, hold::recovery_length(hold));
            phases.extend(after.into_iter().map(|w| phase(w, true, false)));
        }
        let mut changes = vec![
            PlanChange::Phases(phases),
            PlanChange::Prefill(0),
            PlanChange::RunThresholds(BTreeMap::new()),
            PlanChange::DrainTimeout(DRAIN),
        ];
        // A screen only finds the rate; the whole confirmation measures the bystander alone.
        changes.extend(screen.then_some(PlanChange::BystanderNotAlone));
        self.plan.changed(changes)
    }
}

impl Confirmation {
    /// No tries yet, on `schedule`.
    fn new(request: &CapacityRequest, schedule: &Schedule) -> Confirmation {
        Confirmation {
            held_for_s: schedule.held.as_secs_f64(),
            basis: schedule.basis.clone(),
            first_vacuum: Some(schedule.first_vacuum),
            screen_s: schedule.first_naptime.as_secs_f64(),
            hold_horizon_s: request.search.hold_horizon.map(|h| h.as_secs_f64()),
            tries: Vec::new(),
            remeasured: 0,
            load_machine_limited: false,
            upset: Some(request.search.upset).filter(Upset::is_on),
            // `--at` asks about its own number of fresh queues.
            runs: match request.search.at_rate {
                Some(_) => request.search.at_runs,
                None => request.search.stable_runs,
            },
        }
    }

    /// Runs `tried` on a fresh queue, again while the load machine disturbs it (at most
    /// [`REMEASURES`] times more); every try is kept. `None` after Ctrl-C; else whether the
    /// last one held, and whether it too was disturbed.
    async fn try_until_clean(
        &mut self,
        request: &CapacityRequest,
        (server, schedule): (&Arc<Server>, &Schedule),
        tried: Next,
        shutdown: &CancellationToken,
    ) -> Result<Option<(bool, bool, DesignRecord)>, Failure> {
        for again in 0..=REMEASURES {
            if shutdown.is_cancelled() {
                return Ok(None);
            }
            let index = self.tries.len() as u32;
            let (t, design) = match one_try(request, server, index, tried, schedule, shutdown).await
            {
                Err(Failure::Interrupted) => return Ok(None),
                other => other?,
            };
            let (held, disturbed) = (t.held, t.disturbed);
            self.tries.push(t);
            if !disturbed || again == REMEASURES {
                self.load_machine_limited |= disturbed;
                return Ok(Some((held, disturbed, design)));
            }
            self.remeasured += 1;
            request.status.line(&format!(
                "  the load machine stalled in the window that broke: measuring {:.0} jobs/s again ({} of {REMEASURES})",
                rate_of(tried),
                again + 1
            ));
        }
        unreachable!("the loop returns at its last turn")
    }
}

fn rate_of(tried: Next) -> f64 {
    match tried {
        Next::Screen(r) | Next::Whole(r) => r,
    }
}

/// Offers rates from `found` down on fresh queues as the [`Ladder`] chooses, until a whole
/// confirmation holds or the tries run out (or Ctrl-C: the tries so far are kept).
pub async fn confirm(
    request: &CapacityRequest,
    server: &Arc<Server>,
    found: f64,
    schedule: Schedule,
    shutdown: &CancellationToken,
) -> Result<Confirmation, Failure> {
    let mut confirmation = Confirmation::new(request, &schedule);
    let mut ladder = Ladder::new(request.search.max_per_s);
    let mut next = Some(Ladder::first(found, schedule.screens()));
    let tries = request.search.confirm_tries;
    for left in (1..=tries).rev() {
        let Some(mut tried) = next.filter(|_| !shutdown.is_cancelled()) else {
            break;
        };
        if left == 1 {
            tried = ladder.last_chance(tried);
        }
        let on = (server, &schedule);
        match confirmation
            .try_until_clean(request, on, tried, shutdown)
            .await?
        {
            None => break,
            // Disturbed every time: the load machine, not the queue, ends the confirmation.
            Some((_, true, _)) => break,
            Some((held, false, _)) => {
                next = match tried {
                    // A rate is stable on `runs` fresh queues: the same rate again.
                    Next::Whole(r) if held && confirmation.held_at(r) < confirmation.runs => {
                        Some(Next::Whole(r))
                    }
                    _ => ladder.after(tried, held),
                }
            }
        }
    }
    Ok(confirmation)
}

/// `capacity --at`: a whole confirmation at `rate` on each of `runs` fresh queues, every one
/// of them whatever the others did (how many held is the answer), or until Ctrl-C; with the
/// design the tries measured.
pub async fn at(
    request: &CapacityRequest,
    server: &Arc<Server>,
    (rate, runs): (f64, u32),
    schedule: Schedule,
    shutdown: &CancellationToken,
) -> Result<(Confirmation, Option<DesignRecord>), Failure> {
    let mut confirmation = Confirmation::new(request, &schedule);
    let mut design = None;
    for _ in 0..runs {
        let on = (server, &schedule);
        let whole = Next::Whole(rate);
        match confirmation
            .try_until_clean(request, on, whole, shutdown)
            .await?
        {
            None => break,
            Some((_, _, d)) => design.get_or_insert(d),
        };
    }
    Ok((confirmation, design))
}

/// One try on a fresh queue; with the design it measured.
async fn one_try(
    request: &CapacityRequest,
    server: &Arc<Server>,
    index: u32,
    tried: Next,
    schedule: &Schedule,
    shutdown: &CancellationToken,
) -> Result<(Try, DesignRecord), Failure> {
    let (rate, screen) = match tried {
        Next::Screen(r) => (r, true),
        Next::Whole(r) => (r, false),
    };
    let plan = request.confirm_plan(rate, schedule, screen)?;
    let kind = if screen { "screen" } else { "confirm" };
    let dir = request.out_dir.join("confirm").join(format!(
        "{:02}-{kind}-{}-per-s",
        index + 1,
        rate.round()
    ));
    request.status.line(&match screen {
        true => format!(
            "screening {rate:.0} jobs/s on a fresh queue for its first {} ({})",
            HumanDuration(schedule.first_naptime),
            schedule.basis
        ),
        false => format!(
            "confirming {rate:.0} jobs/s on a fresh queue for {} ({}){}",
            HumanDuration(schedule.held),
            schedule.basis,
            Some(request.search.upset)
                .filter(Upset::is_on)
                .map_or(String::new(), |u| format!(
                    ", with {} after its first window",
                    u.phrase()
                ))
        ),
    });
    // A window that breaks the objective ends the try: the rate cannot hold any more.
    let opts = RunOptions {
        out_dir: Some(dir.clone()),
        status: request.status.clone(),
        progress_bar: request.progress_bar,
        abort_on_fail: true,
        ..RunOptions::default()
    };
    let mut session = Session::set_up(&plan, &opts, server, shutdown).await?;
    let outcome = session.step(&plan, &opts, shutdown).await;
    session.tear_down(false, &request.status).await;
    let results = outcome?.results;
    let design = results.summary.design.clone();
    Ok((
        judge_try(request, &plan, &results, (rate, screen), dir),
        design,
    ))
}

/// A try's windows judged, its hold's effect read, and each window's line shown.
fn judge_try(
    request: &CapacityRequest,
    plan: &Plan,
    results: &crate::report::RunResults,
    (rate, screen): (f64, bool),
    dir: PathBuf,
) -> Try {
    let whole = whole_windows(plan, &results.summary, rate, &dir);
    let of = |prefix: &str| -> Vec<Step> {
        let named = whole.iter().filter(|(name, _)| name.starts_with(prefix));
        named.map(|(_, step)| step.clone()).collect()
    };
    let (windows, held_windows) = (of("window-"), of(hold::HELD));
    let judged = plan
        .phases
        .iter()
        .filter(|p| p.name.starts_with("window-") || p.name.starts_with(hold::HELD))
        .count();
    let upset = Some(request.search.upset)
        .filter(|u| u.is_on() && !screen)
        .and_then(|u| UpsetEffect::of(results, &u, plan.consumers.count as u32));
    let upset_planned = plan.phases.iter().any(|p| p.name.starts_with(UPSET));
    let held = windows.len() + held_windows.len() == judged
        && windows.iter().chain(&held_windows).all(|w| w.passed)
        && (!upset_planned || upset.as_ref().is_some_and(|u| u.recovered))
        && results.summary.accounting.sound;
    // The window that broke, broken while the load machine stalled: not the queue's.
    let disturbed = !held
        && results.summary.accounting.sound
        && windows
            .iter()
            .chain(&held_windows)
            .find(|w| !w.passed)
            .is_some_and(|w| w.disturbed);
    for (name, w) in &whole {
        request.status.line(&format!("  {name}: {}", w.line()));
    }
    let recovery_s = request.search.hold_horizon.map(hold::recovery_length);
    let hold = recovery_s
        .filter(|_| !screen)
        .and_then(|r| HoldEffect::of(results, held_windows, (of(hold::RECOVERY), r.as_secs_f64())));
    if let Some(h) = &hold {
        request.status.line(&format!("  {}", h.sentence()));
    }
    if let Some(u) = &upset {
        request.status.line(&format!("  upset: {}", u.sentence()));
    }
    Try {
        rate,
        screen,
        held,
        window_s: plan
            .phases
            .iter()
            .find(|p| p.name == "window-1")
            .map_or(0.0, |w| w.duration.as_secs_f64()),
        windows,
        disturbed,
        hold,
        upset,
        upset_windows: of(UPSET),
        dir,
    }
}

/// The measured windows the try ran whole, by name, each judged: the one under way when a
/// broken window stopped the try is left out.
fn whole_windows(plan: &Plan, summary: &Summary, rate: f64, dir: &Path) -> Vec<(String, Step)> {
    let consumers = plan.consumers.count as u32;
    let planned = |name: &str| plan.phases.iter().find(|p| p.name == name);
    summary
        .phases
        .iter()
        .filter(|p| p.measured)
        .filter(|p| {
            planned(&p.name).is_some_and(|w| p.duration_s >= 0.99 * w.duration.as_secs_f64())
        })
        .map(|p| {
            let step = judge_phase(summary, p, rate, consumers, dir.to_path_buf());
            (p.name.clone(), step)
        })
        .collect()
}

#[cfg(test)]
mod tests;
