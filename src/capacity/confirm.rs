//! The search's answer, confirmed. The search measures short steps on one queue that has
//! already been through a vacuum cycle, so its figure is a capacity *between vacuums*: on a
//! fresh table autovacuum may not wake before dead tuples pile up. The confirmation offers
//! the found rate on a fresh queue (a new schema on the same server) for long enough to span
//! at least two autovacuum cycles, judged window by window; a rate that does not hold is
//! stepped down (× [`STEP_DOWN`]) and tried again, a bounded number of times.

use super::hold::{self, HoldEffect};
use super::{CapacityRequest, Step, judge_phase};
use crate::error::{Failure, InputError};
use crate::provider::Server;
use crate::report::Summary;
use crate::run::{RunOptions, Session};
use crate::scenario::{Confirm, HumanDuration, PhaseSection, Plan, PlanChange, Rate};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Each try after the first offers this share of the last.
pub const STEP_DOWN: f64 = 0.85;
/// The shortest confirmation `auto` chooses.
const AT_LEAST: Duration = Duration::from_secs(180);
/// How long a confirmation's queue may drain after its last window.
const DRAIN: Duration = Duration::from_secs(10);
/// About how long each judged window of a confirmation is.
const WINDOW: Duration = Duration::from_secs(30);

/// How a confirmation went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Confirmation {
    /// How long each try held its rate (the judged windows together), seconds.
    pub held_for_s: f64,
    /// Why that long: `3 × autovacuum_naptime (60s)`, or the scenario's setting.
    pub basis: String,
    /// With `capacity.hold_horizon`: how long the horizon was to be held after the clean
    /// windows, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_horizon_s: Option<f64>,
    pub tries: Vec<Try>,
}

impl Confirmation {
    /// The rate that held, if one did.
    pub fn confirmed_per_s(&self) -> Option<f64> {
        self.tries.iter().find(|t| t.held).map(|t| t.rate)
    }
}

/// One rate offered on a fresh queue, window after window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Try {
    pub rate: f64,
    /// Every window met the objective.
    pub held: bool,
    /// How long each window is, seconds.
    pub window_s: f64,
    /// The windows, judged as the search judges its steps, with what the database did.
    pub windows: Vec<Step>,
    /// With `capacity.hold_horizon`: the windows while the horizon was held and after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<HoldEffect>,
    pub dir: PathBuf,
}

/// How long a confirmation holds its rate, and why: `None` when it is off.
pub fn duration(setting: Confirm, server: &BTreeMap<String, String>) -> Option<(Duration, String)> {
    match setting {
        Confirm::Off => None,
        Confirm::For(d) => Some((d.0, format!("capacity.confirm = \"{d}\""))),
        Confirm::Auto => Some(auto(server)),
    }
}

/// The larger of [`AT_LEAST`] and 3 × the server's autovacuum_naptime.
fn auto(server: &BTreeMap<String, String>) -> (Duration, String) {
    let naptime = server
        .get("autovacuum_naptime")
        .and_then(|v| humantime::parse_duration(v).ok());
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

/// `total` cut into windows of about [`WINDOW`], named `{prefix}1`, `{prefix}2`, …
fn windows(prefix: &str, total: Duration) -> Vec<(String, Duration)> {
    let count = (total.as_secs_f64() / WINDOW.as_secs_f64()).ceil() as u32;
    let count = count.clamp(1, 120);
    (1..=count)
        .map(|i| (format!("{prefix}{i}"), total / count))
        .collect()
}

impl CapacityRequest {
    /// The plan of a confirmation at `rate`: a warm-up, then windows of about [`WINDOW`]
    /// filling `held`, each measured and carrying the objective; with a held horizon, its
    /// windows (also judged) and the recovery windows (measured only) after them. The drain
    /// is short: a rate that held leaves little to drain, and one that did not leaves a
    /// backlog on a queue that is dropped anyway (its jobs are proved unfinished, not lost).
    pub fn confirm_plan(&self, rate: f64, held: Duration) -> Result<Plan, InputError> {
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
        phases.extend(
            windows("window-", held)
                .into_iter()
                .map(|w| phase(w, true, true)),
        );
        if let Some(hold) = self.search.hold_horizon {
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
        self.plan.changed(vec![
            PlanChange::Phases(phases),
            PlanChange::Prefill(0),
            PlanChange::RunThresholds(BTreeMap::new()),
            PlanChange::DrainTimeout(DRAIN),
        ])
    }
}

/// Offers `found` on a fresh queue for `held`, stepping down until a rate holds or the
/// tries run out (or Ctrl-C: the tries so far are kept).
pub async fn confirm(
    request: &CapacityRequest,
    server: &Arc<Server>,
    found: f64,
    (held, basis): (Duration, String),
    shutdown: &CancellationToken,
) -> Result<Confirmation, Failure> {
    let mut confirmation = Confirmation {
        held_for_s: held.as_secs_f64(),
        basis,
        hold_horizon_s: request.search.hold_horizon.map(|h| h.as_secs_f64()),
        tries: Vec::new(),
    };
    let mut rate = found;
    for index in 0..request.search.confirm_tries {
        if shutdown.is_cancelled() {
            break;
        }
        let t = match one_try(
            request,
            server,
            index,
            rate,
            held,
            &confirmation.basis,
            shutdown,
        )
        .await
        {
            Err(Failure::Interrupted) => break,
            other => other?,
        };
        let held = t.held;
        confirmation.tries.push(t);
        if held || shutdown.is_cancelled() {
            break;
        }
        rate = (rate * STEP_DOWN).round();
    }
    Ok(confirmation)
}

async fn one_try(
    request: &CapacityRequest,
    server: &Arc<Server>,
    index: u32,
    rate: f64,
    held: Duration,
    basis: &str,
    shutdown: &CancellationToken,
) -> Result<Try, Failure> {
    let plan = request.confirm_plan(rate, held)?;
    let dir =
        request
            .out_dir
            .join("confirm")
            .join(format!("{:02}-{}-per-s", index + 1, rate.round()));
    request.status.line(&format!(
        "confirming {rate:.0} jobs/s on a fresh queue for {} ({basis})",
        HumanDuration(held)
    ));
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
    let whole = whole_windows(&plan, &results.summary, rate, &dir);
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
    let held = windows.len() + held_windows.len() == judged
        && windows.iter().chain(&held_windows).all(|w| w.passed)
        && results.summary.accounting.sound;
    for (name, w) in &whole {
        request.status.line(&format!("  {name}: {}", w.line()));
    }
    let recovery_s = request.search.hold_horizon.map(hold::recovery_length);
    let hold = recovery_s.and_then(|r| {
        HoldEffect::of(
            &results,
            held_windows,
            (of(hold::RECOVERY), r.as_secs_f64()),
        )
    });
    if let Some(h) = &hold {
        request.status.line(&format!("  {}", h.sentence()));
    }
    Ok(Try {
        rate,
        held,
        window_s: plan
            .phases
            .iter()
            .find(|p| p.name == "window-1")
            .map_or(0.0, |w| w.duration.as_secs_f64()),
        windows,
        hold,
        dir,
    })
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
mod tests {
    use super::*;

    #[test]
    fn auto_spans_three_naptimes_and_at_least_three_minutes() {
        let settings = |v: &str| BTreeMap::from([("autovacuum_naptime".into(), v.into())]);
        let (d, why) = duration(Confirm::Auto, &settings("60s")).unwrap();
        assert_eq!(d, Duration::from_secs(180));
        assert!(why.contains("autovacuum_naptime (60s)"), "{why}");
        let (d, why) = duration(Confirm::Auto, &settings("2min")).unwrap();
        assert_eq!(d, Duration::from_secs(360));
        assert_eq!(why, "3 × autovacuum_naptime (120s)");
        let (d, why) = duration(Confirm::Auto, &BTreeMap::new()).unwrap();
        assert_eq!(d, Duration::from_secs(180));
        assert!(why.contains("no autovacuum_naptime"), "{why}");
        assert_eq!(duration(Confirm::Off, &settings("60s")), None);
        let set = Confirm::For(HumanDuration::from_secs(20));
        assert_eq!(
            duration(set, &settings("60s")).unwrap().0,
            Duration::from_secs(20)
        );
    }
}
