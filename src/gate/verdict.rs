//! The gate's last stage: every scenario's runs read back as `compare` reads them (each
//! scenario a scope, its runs `r1` … `rN` on both sides compared pair by pair), what changed
//! named, and every figure of every scenario judged at one false-alarm rate — the rate is
//! the whole gate's, shared over all the figures it judges, not each scenario's.

use super::measure::{Measurement, side_dir};
use super::plan::{GatePlan, GateRequest, Side};
use crate::compare::{self, Figures, GateRules, Key, Outcome, Sorted};
use crate::error::{Failure, InputError};
use anyhow::anyhow;
use serde::Serialize;

/// What the gate concluded, as plain data (`gate.json`); the candidate's figures beside it
/// for the exports.
#[derive(Debug, Clone, Serialize)]
pub struct GateVerdict {
    pub base: String,
    pub cand: String,
    /// Pairs measured of each scenario.
    pub pairs: u32,
    pub scenarios: Vec<ScenarioChanges>,
    /// Differences allowed by `--allow-different`, judged anyway.
    pub allowed: Vec<String>,
    /// The candidate's runs that did not end as planned (a drain that timed out, a run
    /// stopped by an error) while the base's did: a regression in itself.
    pub unfinished: Vec<String>,
    pub outcome: Outcome,
    /// `regressed`, `inconclusive` or `no regression`.
    pub verdict: &'static str,
    pub prepare_s: f64,
    pub measure_s: f64,
    #[serde(skip)]
    pub candidate: Figures,
}

/// One scenario of the gate and what the pull request changed in it.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioChanges {
    pub file: String,
    pub name: String,
    /// Before measuring (the scenario file, the design's files) and after (the library the
    /// workers reported, the files as the runs recorded them).
    pub changes: Vec<String>,
}

impl GateVerdict {
    /// The gate fails: a figure regressed, a candidate's run did not end as planned, or
    /// (with `--inconclusive fail`) a figure could not be told from noise.
    pub fn fails(&self, rules: &GateRules) -> bool {
        self.outcome.regressions().next().is_some()
            || !self.unfinished.is_empty()
            || (rules.fail_inconclusive && self.outcome.inconclusive().next().is_some())
    }
}

/// Judges every scenario's runs; an error when the base's runs cannot be judged.
pub fn judge(
    request: &GateRequest,
    plan: &GatePlan,
    measured: &Measurement,
    rules: &GateRules,
) -> Result<GateVerdict, Failure> {
    let (base, mut cand, mut scenarios) = read_back(request, plan, measured)?;
    let mut unfinished = unfinished(&base, &mut cand, rules)?;
    if let Some(stopped) = &measured.cand_stopped {
        // The run that stopped is said once, with its error.
        let run = stopped.split(" stopped on").next().unwrap_or_default();
        unfinished.retain(|u| !u.starts_with(&format!("{run} ")));
        unfinished.push(stopped.clone());
    }
    let allowed = name_changes(&mut scenarios, &base, &cand, rules)?;
    let outcome = compare::judge(&base, &cand, rules);
    let verdict = match (outcome.regressions().next(), unfinished.is_empty()) {
        (Some(_), _) | (None, false) => "regressed",
        _ if outcome.inconclusive().next().is_some() => "inconclusive",
        _ => "no regression",
    };
    Ok(GateVerdict {
        base: request.base.display().to_string(),
        cand: request.cand.display().to_string(),
        pairs: measured.pairs_done,
        scenarios,
        allowed,
        unfinished,
        outcome,
        verdict,
        prepare_s: measured.prepare_s,
        measure_s: measured.measure_s,
        candidate: cand,
    })
}

/// Both sides' runs of every scenario, each scenario a scope; a scenario a stopped
/// candidate never reached is left out.
fn read_back(
    request: &GateRequest,
    plan: &GatePlan,
    measured: &Measurement,
) -> Result<(Figures, Figures, Vec<ScenarioChanges>), Failure> {
    let (mut base, mut cand, mut scenarios) = (Figures::new(), Figures::new(), Vec::new());
    for half in &plan.halves {
        let read = |side: Side| -> Result<compare::ScopeFigures, Failure> {
            let dir = side_dir(&request.out_dir, &half.name, side);
            let mut figures = compare::read(&dir).map_err(Failure::Run)?;
            figures
                .remove("run")
                .ok_or_else(|| Failure::Run(anyhow!("{} holds no runs", dir.display())))
        };
        match (read(Side::Base), read(Side::Cand)) {
            (Ok(b), Ok(c)) => {
                base.insert(half.name.clone(), b);
                cand.insert(half.name.clone(), c);
            }
            (Err(_), _) | (_, Err(_)) if measured.cand_stopped.is_some() => continue,
            (Err(e), _) | (_, Err(e)) => return Err(e),
        }
        scenarios.push(ScenarioChanges {
            file: half.file.display().to_string(),
            name: half.name.clone(),
            changes: half.changes.clone(),
        });
    }
    Ok((base, cand, scenarios))
}

/// Adds to each scenario what its runs say changed (the library, the files as installed);
/// refuses what differs by accident and was not allowed; the allowed differences.
fn name_changes(
    scenarios: &mut [ScenarioChanges],
    base: &Figures,
    cand: &Figures,
    rules: &GateRules,
) -> Result<Vec<String>, Failure> {
    let mut allowed = Vec::new();
    for s in scenarios.iter_mut() {
        let one = |f: &Figures| Figures::from([("run".to_string(), f[&s.name].clone())]);
        let sorted = Sorted::of(compare::differences(&one(base), &one(cand)), &rules.allowed);
        if let Some(refusal) = sorted.refusal() {
            return Err(Failure::Input(InputError::whole(&s.file, refusal)));
        }
        for change in sorted.changes {
            if !s.changes.contains(&change.text) {
                s.changes.push(change.text);
            }
        }
        let name = &s.name;
        allowed.extend(
            sorted
                .allowed
                .into_iter()
                .map(|d| format!("{name}: {}", d.text)),
        );
    }
    Ok(allowed)
}

/// The candidate's runs that did not end as planned, taken out of what `compare` would
/// refuse; the base's stop the gate (nothing to hold the candidate against), unless allowed.
fn unfinished(
    base: &Figures,
    cand: &mut Figures,
    rules: &GateRules,
) -> Result<Vec<String>, Failure> {
    let allowed = rules.allowed.contains(&Key::Unfinished);
    let mut found = Vec::new();
    for (scope, b) in base {
        if !b.identity.incomplete.is_empty() && !allowed {
            return Err(Failure::Run(anyhow!(
                "the base's {} of {scope} did not end as planned (drain timed out or stopped by an error): the gate has nothing sound to hold the candidate against; see their report.md, or pass --allow-different unfinished",
                b.identity.incomplete.join(", ")
            )));
        }
    }
    for (scope, c) in cand.iter_mut() {
        if allowed {
            continue;
        }
        for run in std::mem::take(&mut c.identity.incomplete) {
            found.push(format!(
                "{scope}: the candidate's {run} did not end as planned (drain timed out or stopped by an error)"
            ));
        }
    }
    Ok(found)
}

/// The verdict as Markdown: what changed, then `compare`'s table of every figure.
pub fn markdown(v: &GateVerdict) -> String {
    let mut md = format!(
        "# dbq-bench gate: {}\n\nBase `{}` against candidate `{}`, {} pair(s) side by side on one server.\n\n",
        v.verdict, v.base, v.cand, v.pairs
    );
    for s in &v.scenarios {
        let changed = match s.changes.is_empty() {
            true => "nothing in the scenario or the design's files".to_string(),
            false => s.changes.join("; "),
        };
        md.push_str(&format!(
            "- `{}` ({}): changed: {changed}\n",
            s.file, s.name
        ));
    }
    for u in &v.unfinished {
        md.push_str(&format!("- **{u}**: a regression\n"));
    }
    for a in &v.allowed {
        md.push_str(&format!("- allowed (--allow-different): {a}\n"));
    }
    let table = compare::markdown(&v.outcome, &v.base, &v.cand, &[]);
    let table = table.split_once("\n\n").map_or(table.as_str(), |(_, t)| t);
    md.push('\n');
    md.push_str(table);
    md
}
