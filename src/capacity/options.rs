//! How the capacity search runs (`[capacity]` in the scenario, or flags): its rates, its
//! objective, its budget, its confirmation, and the checks that refuse bad values.

use super::upset::Upset;
use crate::backend::Engine;
use crate::error::InputError;
use crate::scenario::{Confirm, FirstVacuum, HumanDuration};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// How the search runs (`[capacity]` in the scenario, or flags).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Search {
    /// The first rate offered, jobs/s.
    pub start_per_s: f64,
    /// Never offer more than this.
    pub max_per_s: f64,
    /// Stop bisecting when the last good and first bad rate are within this share.
    pub precision: f64,
    pub warmup: Duration,
    pub measure: Duration,
    /// Stop searching after this long (the answer is then the best rate found so far).
    pub budget: Duration,
    /// The objective: threshold conditions judged on each step's measured window, besides
    /// "completions keep up and producers keep their schedule".
    pub slo: BTreeMap<String, String>,
    /// Search the consumer count instead: the fewest consumers that meet the objective at
    /// this offered rate (jobs/s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumers_for_rate: Option<f64>,
    /// The most consumers a consumer-count search tries.
    #[serde(default = "default_max_consumers")]
    pub max_consumers: u32,
    /// How long the rate found must then hold on a fresh queue (`off`: not confirmed).
    #[serde(default)]
    pub confirm: Confirm,
    /// Confirmation tries at most, screens and whole confirmations together.
    #[serde(default = "default_confirm_tries")]
    pub confirm_tries: u32,
    /// When the confirmation's fresh table gets its first vacuum (resolved for the engine
    /// by [`Search::resolve_first_vacuum`]; absent in results of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_vacuum: Option<FirstVacuum>,
    /// After the confirmation's windows, the xmin horizon held this long at the same rate
    /// (judged), then recovery windows (measured, not judged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_horizon: Option<Duration>,
    /// "Will this rate hold?" instead of a search: whole confirmations at this rate on
    /// `at_runs` fresh queues (`capacity --at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_rate: Option<f64>,
    /// Fresh queues `at_rate` is tried on; it holds only when it held on every one.
    #[serde(default = "default_at_runs")]
    pub at_runs: u32,
    /// The standard upset each whole confirmation carries once its queue has settled
    /// (results of older versions carried none).
    #[serde(default = "Upset::none")]
    pub upset: Upset,
    /// Fresh queues the stable rate must hold and recover on, every one.
    #[serde(default = "one")]
    pub stable_runs: u32,
}

fn one() -> u32 {
    1
}

fn default_stable_runs() -> u32 {
    2
}

fn default_confirm_tries() -> u32 {
    12
}

fn default_max_consumers() -> u32 {
    64
}

fn default_at_runs() -> u32 {
    3
}

impl Search {
    /// The scenario's `[capacity]` with `--slo` conditions on top, checked.
    pub fn from_section(
        section: Option<&crate::scenario::CapacitySection>,
        slo_flags: &[String],
        consumers_for: Option<f64>,
        quick: bool,
        source: &str,
    ) -> Result<Search, InputError> {
        let mut s = Search::default();
        let err =
            |key: &str, reason: String| InputError::new(source, format!("capacity.{key}"), reason);
        if let Some(c) = section {
            s.take(c).map_err(|(key, reason)| err(&key, reason))?;
        }
        for flag in slo_flags {
            let source = format!("--slo {flag}");
            let (k, v) = flag.split_once('=').ok_or_else(|| {
                InputError::whole(
                    &source,
                    "expected metric=condition, e.g. end_to_end.p99=<250ms",
                )
            })?;
            let (k, v) = (k.trim(), v.trim());
            crate::thresholds::parse(k, v, Some("step"))
                .map_err(|reason| InputError::whole(&source, reason))?;
            s.slo.insert(k.to_string(), v.to_string());
        }
        if let Some(rate) = consumers_for {
            s.consumers_for_rate = Some(rate);
            if !(rate.is_finite() && (1.0..=1_000_000.0).contains(&rate)) {
                let reason = format!("must be between 1 and 1000000 jobs/s, got {rate}");
                return Err(InputError::whole(format!("--consumers-for {rate}"), reason));
            }
        }
        if quick {
            s.confirm = Confirm::Off;
        }
        s.check().map_err(|(key, reason)| err(key, reason))?;
        Ok(s)
    }

    /// Sets the confirmation (`capacity --confirm`), checked.
    pub fn set_confirm(&mut self, confirm: Confirm) -> Result<(), String> {
        self.confirm = confirm;
        self.check().map_err(|(_, reason)| reason)
    }

    /// When the confirmation's fresh table gets its first vacuum: `flag` (`--first-vacuum`),
    /// else the scenario's, else `late` where the engine can keep autovacuum off a table and
    /// `whenever` where it cannot; `late` on such an engine is refused (the reason).
    pub fn resolve_first_vacuum(
        &mut self,
        engine: Engine,
        flag: Option<FirstVacuum>,
    ) -> Result<(), String> {
        let can_delay = engine.supports().faults.contains(&"delay_vacuum");
        let chosen = flag.or(self.first_vacuum);
        self.first_vacuum = Some(match chosen {
            Some(FirstVacuum::Late) if !can_delay => {
                return Err(format!(
                    "\"late\" keeps autovacuum off the queue table, which {} has not (its \
                     cleanup is the server's); write \"whenever\"",
                    engine.label()
                ));
            }
            Some(v) => v,
            None if can_delay => FirstVacuum::Late,
            None => FirstVacuum::Whenever,
        });
        Ok(())
    }

    /// Asks "will `rate` hold on `runs` fresh queues?" instead of searching (`capacity --at`),
    /// checked.
    pub fn set_at(&mut self, rate: f64, runs: u32) -> Result<(), String> {
        (self.at_rate, self.at_runs) = (Some(rate), runs);
        self.check().map_err(|(_, reason)| reason)
    }

    /// Sets the held horizon (`capacity --hold-horizon`), checked.
    pub fn set_hold_horizon(&mut self, hold: Duration) -> Result<(), String> {
        self.hold_horizon = Some(hold);
        self.check().map_err(|(_, reason)| reason)
    }

    /// The values a `[capacity]` table sets; an error names its key (below `capacity.`).
    fn take(&mut self, c: &crate::scenario::CapacitySection) -> Result<(), (String, String)> {
        self.start_per_s = c.start_rate.unwrap_or(self.start_per_s);
        self.max_per_s = c.max_rate.unwrap_or(self.max_per_s);
        self.precision = c.precision.unwrap_or(self.precision);
        self.warmup = c.warmup.map_or(self.warmup, |d| d.0);
        self.measure = c.measure.map_or(self.measure, |d| d.0);
        self.budget = c.budget.map_or(self.budget, |d| d.0);
        self.consumers_for_rate = c.consumers_for_rate;
        self.max_consumers = c.max_consumers.unwrap_or(self.max_consumers);
        self.confirm = c.confirm.unwrap_or(self.confirm);
        self.confirm_tries = c.confirm_tries.unwrap_or(self.confirm_tries);
        self.first_vacuum = c.first_vacuum.or(self.first_vacuum);
        self.hold_horizon = c.hold_horizon.map(|d| d.0).or(self.hold_horizon);
        self.stable_runs = c.stable_runs.unwrap_or(self.stable_runs);
        if let Some(u) = &c.upset {
            self.upset.kind = u.kind.unwrap_or(self.upset.kind);
            self.upset.size = u.size.map_or(self.upset.size, |d| d.0);
            self.upset.recover_within = u.recover_within.map_or(self.upset.recover_within, |d| d.0);
        }
        if !c.slo.is_empty() {
            for (k, v) in &c.slo {
                crate::thresholds::parse(k, v, Some("step"))
                    .map_err(|reason| (format!("slo.{k}"), reason))?;
            }
            self.slo = c.slo.clone();
        }
        Ok(())
    }

    /// The limits of every value; an error names its key (below `capacity.`).
    fn check(&self) -> Result<(), (&'static str, String)> {
        let s = self;
        if let Some(rate) = s.consumers_for_rate
            && !(rate.is_finite() && (1.0..=1_000_000.0).contains(&rate))
        {
            let reason = format!("must be between 1 and 1000000 jobs/s, got {rate}");
            return Err(("consumers_for_rate", reason));
        }
        s.check_confirmation()?;
        s.check_upset()?;
        s.check_rates()?;
        s.check_windows()
    }

    /// The confirmation's tries and length, the held horizon and `--at`.
    fn check_confirmation(&self) -> Result<(), (&'static str, String)> {
        let s = self;
        if !(1..=20).contains(&s.confirm_tries) {
            let reason = format!("must be between 1 and 20, got {}", s.confirm_tries);
            return Err(("confirm_tries", reason));
        }
        if let Confirm::For(d) = s.confirm
            && !(Duration::from_secs(1)..=Duration::from_secs(24 * 3600)).contains(&d.0)
        {
            return Err((
                "confirm",
                "must be \"auto\", \"off\" or between 1s and 24h".into(),
            ));
        }
        if let Some(hold) = s.hold_horizon {
            if !(Duration::from_secs(1)..=Duration::from_secs(24 * 3600)).contains(&hold) {
                return Err(("hold_horizon", "must be between 1s and 24h".into()));
            }
            if s.confirm == Confirm::Off || s.consumers_for_rate.is_some() {
                let reason = "is held during the confirmation, which a consumer-count search, \
                    --quick and confirm = \"off\" leave out"
                    .into();
                return Err(("hold_horizon", reason));
            }
        }
        if let Some(rate) = s.at_rate {
            if !(rate.is_finite() && (1.0..=1_000_000.0).contains(&rate)) {
                let reason = format!("must be between 1 and 1000000 jobs/s, got {rate}");
                return Err(("at_rate", reason));
            }
            if s.confirm == Confirm::Off || s.consumers_for_rate.is_some() {
                let reason = "runs whole confirmations at one rate, which a consumer-count \
                    search, --quick and confirm = \"off\" leave out"
                    .into();
                return Err(("at_rate", reason));
            }
        }
        if !(1..=20).contains(&s.at_runs) {
            return Err((
                "at_runs",
                format!("must be between 1 and 20, got {}", s.at_runs),
            ));
        }
        Ok(())
    }

    /// The upset's size and recovery span, and the fresh queues of the stable rate.
    fn check_upset(&self) -> Result<(), (&'static str, String)> {
        let u = &self.upset;
        if !(Duration::from_millis(100)..=Duration::from_secs(300)).contains(&u.size) {
            let reason = format!(
                "must be between 100ms and 5m, got {}",
                HumanDuration(u.size)
            );
            return Err(("upset.size", reason));
        }
        if !(Duration::from_secs(1)..=Duration::from_secs(3600)).contains(&u.recover_within) {
            let reason = format!(
                "must be between 1s and 1h, got {}",
                HumanDuration(u.recover_within)
            );
            return Err(("upset.recover_within", reason));
        }
        if !(1..=10).contains(&self.stable_runs) {
            let reason = format!("must be between 1 and 10, got {}", self.stable_runs);
            return Err(("stable_runs", reason));
        }
        Ok(())
    }

    /// The consumer and rate bounds of the search, and its precision.
    fn check_rates(&self) -> Result<(), (&'static str, String)> {
        let s = self;
        if !(1..=1024).contains(&s.max_consumers) {
            let reason = format!("must be between 1 and 1024, got {}", s.max_consumers);
            return Err(("max_consumers", reason));
        }
        if !(s.start_per_s.is_finite() && (1.0..=1_000_000.0).contains(&s.start_per_s)) {
            let reason = format!(
                "must be between 1 and 1000000 jobs/s, got {}",
                s.start_per_s
            );
            return Err(("start_rate", reason));
        }
        if !(s.max_per_s.is_finite() && s.max_per_s >= s.start_per_s && s.max_per_s <= 1_000_000.0)
        {
            let reason = format!(
                "must be between start_rate and 1000000 jobs/s, got {}",
                s.max_per_s
            );
            return Err(("max_rate", reason));
        }
        if !(0.01..=1.0).contains(&s.precision) {
            let reason = format!("must be between 0.01 and 1, got {}", s.precision);
            return Err(("precision", reason));
        }
        Ok(())
    }

    /// The measured window, the warm-up and the budget.
    fn check_windows(&self) -> Result<(), (&'static str, String)> {
        let s = self;
        if s.measure < Duration::from_secs(1) || s.measure > Duration::from_secs(3600) {
            return Err(("measure", "must be between 1s and 1h".into()));
        }
        if s.warmup > Duration::from_secs(600) {
            return Err(("warmup", "must be at most 10m".into()));
        }
        if s.budget < s.measure || s.budget > Duration::from_secs(24 * 3600) {
            let reason = "must be at least one measured window and at most 24h".into();
            return Err(("budget", reason));
        }
        Ok(())
    }
}

impl Default for Search {
    fn default() -> Self {
        Search {
            start_per_s: 100.0,
            max_per_s: 100_000.0,
            precision: 0.10,
            warmup: Duration::from_secs(3),
            measure: Duration::from_secs(10),
            budget: Duration::from_secs(300),
            slo: BTreeMap::from([
                ("end_to_end.p99".to_string(), "< 500ms".to_string()),
                ("jobs.enqueue_errors".to_string(), "== 0".to_string()),
                ("jobs.worker_errors".to_string(), "== 0".to_string()),
            ]),
            consumers_for_rate: None,
            max_consumers: default_max_consumers(),
            confirm: Confirm::Auto,
            confirm_tries: default_confirm_tries(),
            first_vacuum: None,
            hold_horizon: None,
            at_rate: None,
            at_runs: default_at_runs(),
            upset: Upset::default(),
            stable_runs: default_stable_runs(),
        }
    }
}
