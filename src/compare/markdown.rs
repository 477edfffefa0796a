//! The gate's outcome in words: one Markdown table for the terminal and GitHub's job summary.

use super::gate::{Outcome, Verdict};

/// The outcome as a Markdown table (for the terminal and `GITHUB_STEP_SUMMARY`), after what
/// changed between the sides on purpose (`changes`: a design's files, a library's version).
pub fn markdown(outcome: &Outcome, baseline: &str, candidate: &str, changes: &[String]) -> String {
    let regressions = outcome.regressions().count();
    let inconclusive = outcome.inconclusive().count();
    let headline = match (regressions, inconclusive) {
        (0, 0) => "no regression".to_string(),
        (0, n) => format!("**inconclusive** on {n} figure(s), no regression shown"),
        (r, _) => format!("**{r} regression(s)**"),
    };
    let apart = outcome
        .judgements
        .iter()
        .any(|j| !j.paired && j.runs.0 >= 2 && j.runs.1 >= 2);
    let apart = if apart {
        " The sides were not measured in pairs: drift of the machine between them counts as \
         change (runs of the same names, r1 … rN, measured side by side are compared pair \
         by pair)."
    } else {
        ""
    };
    let changed = match changes {
        [] => String::new(),
        c => format!(" What changed: {}.", c.join("; ")),
    };
    let mut md = format!(
        "# dbq-bench compare\n\nBaseline `{baseline}`, candidate `{candidate}`: {headline}.{changed} \
         False-alarm rate {:.0}% over {} figure(s) judged with repeats. Baseline and candidate are \
         the geometric means the change compares where it has bounds, medians otherwise.{apart}\n\n\
         | scope | figure | runs | baseline | candidate | change [bounds] | verdict |\n|---|---|---|---|---|---|---|\n",
        outcome.false_alarm_rate * 100.0,
        outcome.tests
    );
    for j in &outcome.judgements {
        let bounds = j.bounds.map_or(String::new(), |(lo, hi)| {
            let (a, b) = if lo <= hi { (lo, hi) } else { (hi, lo) };
            format!(" [{:+.1}%, {:+.1}%]", a * 100.0, b * 100.0)
        });
        let runs = if j.paired {
            format!("{} pairs", j.runs.0)
        } else {
            format!("{} vs {}", j.runs.0, j.runs.1)
        };
        md.push_str(&format!(
            "| {} | {} | {runs} | {:.2} | {:.2} | {:+.1}%{bounds} | {}: {} |\n",
            j.scope,
            j.figure,
            j.baseline,
            j.candidate,
            j.change * 100.0,
            verdict_word(&j.verdict),
            j.why
        ));
    }
    md
}

fn verdict_word(v: &Verdict) -> &'static str {
    match v {
        Verdict::Regressed => "REGRESSED",
        Verdict::NoRegression => "ok",
        Verdict::Inconclusive { .. } => "INCONCLUSIVE",
        Verdict::NotGated => "not gated",
    }
}
