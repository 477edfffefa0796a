//! `dbq-bench compare`: the regression gate between two results.

use super::GateArgs;
use super::shell::{append_to_step_summary, out};
use dbq_bench::compare;
use dbq_bench::error::ExitStatus;
use std::path::Path;

/// Judges the candidate against the baseline; 99 when something regressed (or, with
/// `--inconclusive fail`, could not be told from noise); 2 when the two measured different
/// things and `--allow-different` was not given.
pub fn command(baseline: &Path, candidate: &Path, gate: &GateArgs, quiet: bool) -> ExitStatus {
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
    let changes = match alike(&base, &cand, &rules) {
        Ok(changes) => changes,
        Err(status) => return status,
    };
    let exported = export(&cand, gate);
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
        &changes,
    );
    if !quiet {
        out!("{md}");
    }
    append_to_step_summary(md.as_bytes());
    super::shell::worst(report(&outcome, &rules), exported)
}

/// Refuses two results that measured different things by accident, in one line naming every
/// difference; says what was allowed (`--allow-different KEY`) and what changed on purpose
/// (a design's files, a library's version: the change judged).
fn alike(
    base: &compare::Figures,
    cand: &compare::Figures,
    rules: &compare::GateRules,
) -> Result<Vec<String>, ExitStatus> {
    let sorted = compare::Sorted::of(compare::differences(base, cand), &rules.allowed);
    if let Some(refusal) = sorted.refusal() {
        eprintln!("error: compare: {refusal}");
        return Err(ExitStatus::BadInput);
    }
    for d in &sorted.allowed {
        eprintln!(
            "warning: compared although they differ (--allow-different {}): {}",
            d.key.as_str(),
            d.text
        );
    }
    Ok(sorted.changes.into_iter().map(|d| d.text).collect())
}

/// Writes `figures` in the formats asked for (`--export-bmf`, `--export-github-benchmark`).
pub fn export(figures: &compare::Figures, gate: &GateArgs) -> ExitStatus {
    let formats = [
        (&gate.export_bmf, compare::export::bmf as fn(&_) -> _),
        (
            &gate.export_github_benchmark,
            compare::export::github_benchmark,
        ),
    ];
    let mut status = ExitStatus::Ok;
    for (path, format) in formats {
        let Some(path) = path else { continue };
        let text = serde_json::to_string_pretty(&format(figures)).unwrap_or_default() + "\n";
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("error: writing {}: {e}", path.display());
            status = ExitStatus::RunFailed;
        }
    }
    status
}

/// Exports a results directory's own figures (`run --export-bmf` without a baseline).
pub fn export_dir(dir: &Path, gate: &GateArgs) -> ExitStatus {
    if gate.export_bmf.is_none() && gate.export_github_benchmark.is_none() {
        return ExitStatus::Ok;
    }
    match compare::read(dir) {
        Ok(figures) => export(&figures, gate),
        Err(e) => {
            eprintln!("error: exporting {}: {e:#}", dir.display());
            ExitStatus::RunFailed
        }
    }
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
