//! Results in the formats continuous-benchmarking tools read, so that a team can track the
//! queue over months and not only gate one pull request:
//!
//! - **Bencher Metric Format** (BMF JSON, `bencher run --adapter json`): one benchmark per
//!   scope (`gate: seed on PostgreSQL`, or a matrix cell), one measure per figure, its value
//!   the median of the runs and its bounds the lowest and highest run;
//! - **github-action-benchmark**'s `customSmallerIsBetter`: one entry per gated figure, each
//!   smaller-is-better (latencies in ms, throughput as µs per job), with the runs' range.
//!
//! Built from the figures alone (`compare::read`), so a run, repeated runs, a matrix, a
//! capacity search or a directory of runs export alike. A benchmark's name is the names the
//! team chose — the scenario's `name` and the design's (a custom design's design.toml
//! `name` or directory name), never a path or a hash — so every push appends to one series;
//! the design's hash, the server and the library travel beside it (github-action-benchmark's
//! `extra`).

use super::{Figures, ScopeFigures};
use crate::report::headline::FIGURES;
use serde_json::{Map, Value, json};

/// A benchmark's name: the scenario and design its runs measured, and a matrix cell's scope
/// (a gate's scopes are its scenarios, which the name already says).
fn benchmark(scope: &str, figures: &ScopeFigures) -> String {
    let id = &figures.identity;
    let what = [id.scenario.as_deref(), id.design.as_deref()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(": ");
    match (scope, what.is_empty()) {
        (_, true) => scope.to_string(),
        (s, false) if s.starts_with("cell ") => format!("{what} / {scope}"),
        (_, false) => what,
    }
}

/// What the series' name leaves out, for a point's tooltip: the server, the design's files'
/// hash, the library and the runs.
fn metadata(figures: &ScopeFigures, runs: usize) -> String {
    let id = &figures.identity;
    let mut parts = Vec::new();
    if let Some(server) = &id.server {
        parts.push(format!("server {server}"));
    }
    if let Some(files) = &id.files {
        parts.push(format!("design files sha256 {}", files.sha256));
    }
    if let Some(library) = &id.library {
        parts.push(format!("library {library}"));
    }
    parts.push(format!("{runs} run(s)"));
    parts.join("\n")
}

/// (median, lowest, highest) of the measured values, or `None` when no run measured it.
fn spread(values: &[f64]) -> Option<(f64, f64, f64)> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    let median = if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    };
    Some((median, v[0], v[v.len() - 1]))
}

/// Bencher Metric Format: `{ benchmark: { measure: { value, lower_value, upper_value } } }`.
pub fn bmf(figures: &Figures) -> Value {
    let mut out = Map::new();
    for (scope, f) in figures {
        let mut measures = Map::new();
        for (key, values) in &f.values {
            if let Some((value, lower, upper)) = spread(values) {
                let m = json!({ "value": value, "lower_value": lower, "upper_value": upper });
                measures.insert(key.to_string(), m);
            }
        }
        if !measures.is_empty() {
            out.insert(benchmark(scope, f), Value::Object(measures));
        }
    }
    Value::Object(out)
}

/// github-action-benchmark's `customSmallerIsBetter`: `[{ name, unit, value, range }]`, the
/// gated figures only, throughput turned into µs per job so that smaller is better for all.
pub fn github_benchmark(figures: &Figures) -> Value {
    let mut out = Vec::new();
    for (scope, f) in figures {
        let name = benchmark(scope, f);
        for (key, values) in &f.values {
            let gated = FIGURES
                .iter()
                .find(|g| g.key == *key)
                .is_none_or(|g| g.ungated_because.is_none());
            let Some((value, lower, upper)) = spread(values).filter(|_| gated) else {
                continue;
            };
            let runs = values.iter().filter(|v| v.is_finite()).count();
            let (figure, unit, value, lower, upper) = match *key {
                k if k.ends_with("_per_s") && value > 0.0 => (
                    format!("µs per job ({k})"),
                    "µs",
                    1e6 / value,
                    1e6 / upper,
                    1e6 / lower.max(f64::MIN_POSITIVE),
                ),
                k if k.ends_with("_ms") => (k.to_string(), "ms", value, lower, upper),
                "min_consumers" => (key.to_string(), "consumers", value, lower, upper),
                "lost" => (key.to_string(), "jobs", value, lower, upper),
                _ => continue,
            };
            out.push(json!({
                "name": format!("{name} — {figure}"),
                "unit": unit,
                "value": value,
                "range": format!("{lower:.3}..{upper:.3}"),
                "extra": metadata(f, runs),
            }));
        }
    }
    Value::Array(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::Identity;

    fn two_runs() -> Figures {
        let mut f = ScopeFigures::default();
        f.values.insert("throughput_per_s", vec![1000.0, 800.0]);
        f.values.insert("e2e_p99_ms", vec![12.0, f64::NAN]);
        f.values.insert("dead_tuples_max", vec![5.0, 7.0]);
        f.identity = Identity {
            scenario: Some("gate".into()),
            design: Some("seed on PostgreSQL".into()),
            server: Some("PostgreSQL 15".into()),
            ..Identity::default()
        };
        Figures::from([("run".to_string(), f)])
    }

    #[test]
    fn bencher_gets_every_measured_figure_with_the_runs_as_bounds() {
        let v = bmf(&two_runs());
        let m = &v["gate: seed on PostgreSQL"];
        assert_eq!(m["throughput_per_s"]["value"], 900.0);
        assert_eq!(m["throughput_per_s"]["lower_value"], 800.0);
        assert_eq!(m["throughput_per_s"]["upper_value"], 1000.0);
        assert_eq!(
            m["e2e_p99_ms"]["value"], 12.0,
            "an unmeasured run is left out"
        );
        assert_eq!(m["dead_tuples_max"]["value"], 6.0);
    }

    #[test]
    fn github_action_benchmark_gets_the_gated_figures_smaller_is_better() {
        let v = github_benchmark(&two_runs());
        let entries = v.as_array().unwrap();
        assert_eq!(entries.len(), 2, "dead tuples are not gated: {v}");
        let t = &entries[1];
        assert_eq!(
            t["name"],
            "gate: seed on PostgreSQL — µs per job (throughput_per_s)"
        );
        assert_eq!(t["unit"], "µs");
        assert!((t["value"].as_f64().unwrap() - 1e6 / 900.0).abs() < 1e-6);
        assert_eq!(t["range"], "1000.000..1250.000");
        assert_eq!(t["extra"], "server PostgreSQL 15\n2 run(s)");
    }
}
