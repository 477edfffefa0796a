//! `dbq-bench compare`: the regression gate between two results.

use super::shell::{append_to_step_summary, out};
use dbq_bench::compare;
use dbq_bench::error::ExitStatus;

/// Judges the candidate against the baseline; 99 when something regressed.
pub fn command(
    baseline: &std::path::Path,
    candidate: &std::path::Path,
    max_regression: &[String],
    quiet: bool,
) -> ExitStatus {
    let allowance = match compare::Allowance::parse(max_regression) {
        Ok(a) => a,
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
    let judgements = compare::judge(&base, &cand, &allowance);
    if judgements.is_empty() {
        eprintln!(
            "error: compare: {} and {} share no figures to compare (a run with a run, a matrix with the same matrix)",
            baseline.display(),
            candidate.display()
        );
        return ExitStatus::BadInput;
    }
    let md = compare::markdown(
        &judgements,
        &baseline.display().to_string(),
        &candidate.display().to_string(),
    );
    if !quiet {
        out!("{md}");
    }
    append_to_step_summary(md.as_bytes());
    let mut status = ExitStatus::Ok;
    for j in judgements.iter().filter(|j| j.regressed) {
        eprintln!(
            "regression: {}: {} {:.2} -> {:.2} ({:+.1}%): {}",
            j.scope,
            j.figure,
            j.baseline,
            j.candidate,
            j.change * 100.0,
            j.why
        );
        status = ExitStatus::ThresholdFailed;
    }
    status
}
