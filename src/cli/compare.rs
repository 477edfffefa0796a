//! `dbq-bench compare`: the regression gate between two results.

use super::GateArgs;
use super::shell::{append_to_step_summary, out};
use dbq_bench::compare;
use dbq_bench::error::ExitStatus;

/// Judges the candidate against the baseline; 99 when something regressed (or, with
/// `--inconclusive fail`, could not be told from noise).
pub fn command(
    baseline: &std::path::Path,
    candidate: &std::path::Path,
    gate: &GateArgs,
    quiet: bool,
) -> ExitStatus {
    let rules = match gate.rules() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitStatus::BadInput;
        }
    };
    let (base, cand) = match (compare::read(baseline), compare::read(candidate)) {
        (Ok(b), Ok(c)) => (b, c),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("error: compare: {e:#}");
            return ExitStatus::BadInput;
        }
    };
    let outcome = compare::judge(&base, &cand, &rules);
    if outcome.judgements.is_empty() {
        eprintln!(
            "error: compare: {} and {} share no figures to compare (a run with a run, a matrix with the same matrix)",
            baseline.display(),
            candidate.display()
        );
        return ExitStatus::BadInput;
    }
    let md = compare::markdown(
        &outcome,
        &baseline.display().to_string(),
        &candidate.display().to_string(),
    );
    if !quiet {
        out!("{md}");
    }
    append_to_step_summary(md.as_bytes());
    report(&outcome, &rules)
}

/// One stderr line per regression (and inconclusive figure); the gate's exit status.
fn report(outcome: &compare::Outcome, rules: &compare::GateRules) -> ExitStatus {
    let mut status = ExitStatus::Ok;
    for j in outcome.regressions() {
        eprintln!("regression: {}: {}: {}", j.scope, j.figure, j.why);
        status = ExitStatus::ThresholdFailed;
    }
    for j in outcome.inconclusive() {
        let what = if rules.fail_inconclusive {
            "inconclusive (fails: --inconclusive fail)"
        } else {
            "inconclusive"
        };
        eprintln!("{what}: {}: {}: {}", j.scope, j.figure, j.why);
        if rules.fail_inconclusive {
            status = ExitStatus::ThresholdFailed;
        }
    }
    status
}
