//! Typed changes a study makes to a loaded plan: capacity's steps, calibrate's runs. Each
//! is applied to the plan's resolved scenario, which is then validated again, so a step's
//! plan is checked (and recorded in `scenario.resolved.toml`) exactly as a scenario file
//! is; nothing is written as TOML text or read from disk again.

use super::model::{HandlerSection, PhaseSection};
use super::plan::{EnvDefaults, Plan};
use super::values::HumanDuration;
use crate::backend::queue::VariantName;
use crate::error::InputError;
use std::collections::BTreeMap;
use std::time::Duration;

/// One change.
#[derive(Debug, Clone)]
pub enum PlanChange {
    /// The phases, replaced.
    Phases(Vec<PhaseSection>),
    Consumers(u32),
    Prefill(u64),
    DrainTimeout(Duration),
    /// The run-wide thresholds, replaced (phases keep their own).
    RunThresholds(BTreeMap<String, String>),
    /// The design, without the options of the one it replaces.
    Variant(VariantName),
    Handler(HandlerSection),
    /// The bystander on, unless the scenario says whether it is.
    BystanderUnlessSet,
    /// The bystander runs with the load but is not measured alone first (a short study run
    /// that reports no "added" figure of its own).
    BystanderNotAlone,
    /// Without the harness's own instrumentation in the database: no completion audit, and
    /// the sampler only at phase boundaries (its interval an hour).
    Uninstrumented,
    /// How the producers space their jobs.
    Arrival(super::model::Arrival),
    /// No bystander, whatever the scenario says.
    NoBystander,
    /// The completion audit off unless the scenario asks for it: a capacity is the queue's
    /// as deployed, and the audit adds an insert to every completion's transaction. Kept
    /// where the proof needs it (a design that deletes finished rows) and for a custom
    /// design, whose own audit.sql may be what tells a finished job from a lost one.
    AuditOnlyIfAsked,
}

impl Plan {
    /// This plan with `changes` made, validated again.
    pub fn changed(
        &self,
        changes: impl IntoIterator<Item = PlanChange>,
    ) -> Result<Plan, InputError> {
        let mut s = self.resolved.clone();
        for change in changes {
            match change {
                PlanChange::Phases(p) => s.phases = p,
                PlanChange::Consumers(n) => s.consumers.count = n,
                PlanChange::Prefill(n) => s.producers.prefill = n,
                PlanChange::DrainTimeout(d) => s.drain.timeout = HumanDuration(d),
                PlanChange::RunThresholds(t) => s.thresholds = t,
                PlanChange::Uninstrumented => {
                    s.verify.completion_audit = Some(false);
                    s.sampler.interval = HumanDuration(Duration::from_secs(3600));
                }
                PlanChange::BystanderUnlessSet => {
                    // On where the engine has one (a broker without keys of its own has not).
                    let has = s.database.engine.supports().bystander;
                    s.bystander.enabled = s.bystander.enabled.or(Some(has));
                }
                PlanChange::BystanderNotAlone => {
                    s.bystander.quiet = HumanDuration(Duration::ZERO);
                }
                PlanChange::Variant(v) => {
                    s.queue.variant = v;
                    s.queue.claim_batch = None;
                    s.queue.dir = None;
                }
                PlanChange::Handler(h) => s.consumers.handler = h,
                PlanChange::Arrival(a) => s.producers.arrival = a,
                PlanChange::NoBystander => s.bystander.enabled = Some(false),
                PlanChange::AuditOnlyIfAsked => {
                    let v = s.queue.variant;
                    if !self.audit_asked && !v.needs_audit() && v != VariantName::Custom {
                        s.verify.completion_audit = Some(false);
                    }
                }
            }
        }
        // The resolved scenario holds every value the environment gave the first time.
        let mut plan = Plan::build(s, &self.source, &self.name, &EnvDefaults::default())?;
        // It also holds the audit's value, settled: whether it was asked for is the first's.
        plan.audit_asked = self.audit_asked;
        Ok(plan)
    }

    /// The one measured phase of a plan that has exactly one (a study's step), by index.
    pub fn measured_phase(&self) -> Option<usize> {
        let mut measured = self.phases.iter().enumerate().filter(|(_, p)| p.measured);
        match (measured.next(), measured.next()) {
            (Some((i, _)), None) => Some(i),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Rate;
    use crate::scenario::load::{Overrides, parse};

    fn plan() -> Plan {
        let text = "[queue]\nvariant = \"batch\"\n[producers]\nrate = 100\n[[phases]]\nname = \"a\"\nduration = \"5s\"\n";
        let s = parse("s.toml", text, &Overrides::default()).unwrap();
        Plan::build(s, "s.toml", "s", &EnvDefaults::default()).unwrap()
    }

    #[test]
    fn changes_are_validated_and_recorded() {
        let p = plan();
        assert_eq!(p.queue.variant.claim_batch, 10);
        let step = PhaseSection {
            name: "step".into(),
            duration: HumanDuration::from_secs(2),
            rate: Some(Rate::PerSecond(250.0)),
            measured: true,
            faults: Vec::new(),
            thresholds: BTreeMap::from([("end_to_end.p99".into(), "< 1s".into())]),
        };
        let q = p
            .changed([
                PlanChange::Phases(vec![step]),
                PlanChange::Consumers(3),
                PlanChange::Variant(VariantName::Seed),
            ])
            .unwrap();
        assert_eq!(q.consumers.count, 3);
        assert_eq!(q.queue.variant.claim_batch, 1);
        assert_eq!(q.phases[0].rate, Rate::PerSecond(250.0));
        assert_eq!(q.thresholds.len(), 1);
        assert_eq!(q.measured_phase(), Some(0));
        assert!(q.resolved_toml().contains("consumers"));
        assert_eq!(q.seed, p.seed, "the seed stays");
        let e = p.changed([PlanChange::Consumers(0)]).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("consumers.count"));
    }

    #[test]
    fn the_audit_is_off_for_a_capacity_unless_asked_or_needed() {
        let build = |text: &str| {
            let s = parse("s.toml", text, &Overrides::default()).unwrap();
            Plan::build(s, "s.toml", "s", &EnvDefaults::default()).unwrap()
        };
        let phases = "[[phases]]\nname = \"a\"\nduration = \"5s\"\nrate = 10\n";
        let change = [PlanChange::AuditOnlyIfAsked];
        let seed = build(phases).changed(change.clone()).unwrap();
        assert!(
            !seed.completion_audit,
            "the seed's capacity runs as deployed"
        );
        let asked = format!("[verify]\ncompletion_audit = true\n{phases}");
        let asked = build(&asked).changed(change.clone()).unwrap();
        assert!(asked.completion_audit, "asked for");
        let delete = format!("[queue]\nvariant = \"delete\"\n{phases}");
        let delete = build(&delete).changed(change).unwrap();
        assert!(
            delete.completion_audit,
            "the proof of a delete design needs it"
        );
    }
}
