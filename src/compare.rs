//! `dbq-bench compare BASELINE CANDIDATE`: a regression gate between two results measured
//! the same way (two runs, two matrices, or a run against a saved baseline).
//!
//! Every headline figure (`report::headline`) of every scope (the run, or each matrix cell)
//! is compared by its median. A figure regressed when it got worse by more than its allowed
//! share (`--max-regression`, default 10%) **and**, when both sides have repeats, the
//! candidate's range lies wholly on the worse side of the baseline's (the spread of the
//! repeats says the change is not noise). Any lost job in the candidate is a regression.

use crate::capacity::Capacity;
use crate::matrix::comparison::Comparison;
use crate::report::Summary;
use crate::report::headline::FIGURES;
use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Values of each figure, by scope (`run`, or `cell <i> <label>`), one per repeat.
type Figures = BTreeMap<String, BTreeMap<&'static str, Vec<f64>>>;

/// Reads a results directory: a run's `summary.json`, or a matrix's `comparison.json`.
pub fn read(dir: &Path) -> Result<Figures> {
    let mut out = Figures::new();
    if dir.join("comparison.json").is_file() {
        let text = std::fs::read_to_string(dir.join("comparison.json"))?;
        let c: Comparison = serde_json::from_str(&text)
            .with_context(|| format!("reading {}/comparison.json", dir.display()))?;
        for cell in c.cells {
            let scope = format!("cell {} {}", cell.cell.index, cell.cell.label);
            let figures = out.entry(scope).or_default();
            for f in &FIGURES {
                figures.insert(f.key, cell.runs.iter().map(|r| r.figures[f.key]).collect());
            }
        }
    } else if dir.join("capacity.json").is_file() {
        let text = std::fs::read_to_string(dir.join("capacity.json"))?;
        let c: Capacity = serde_json::from_str(&text)
            .with_context(|| format!("reading {}/capacity.json", dir.display()))?;
        let figures = out.entry("capacity".to_string()).or_default();
        match c.search.consumers_for_rate {
            Some(_) => {
                let fewest = c.min_consumers.map_or(f64::INFINITY, f64::from);
                figures.insert("min_consumers", vec![fewest]);
            }
            None => {
                let max = c.max_sustainable_per_s.unwrap_or(0.0);
                figures.insert("max_sustainable_per_s", vec![max]);
            }
        }
    } else if dir.join("summary.json").is_file() {
        let text = std::fs::read_to_string(dir.join("summary.json"))?;
        let s: Summary = serde_json::from_str(&text)
            .with_context(|| format!("reading {}/summary.json", dir.display()))?;
        let figures = out.entry("run".to_string()).or_default();
        for f in &FIGURES {
            figures.insert(f.key, vec![(f.read)(&s)]);
        }
    } else {
        bail!(
            "{} holds no summary.json (a run), comparison.json (a matrix) or capacity.json (a capacity search)",
            dir.display()
        );
    }
    Ok(out)
}

/// How much worse each figure may get, as a share (0.1 = 10%).
#[derive(Debug, Clone)]
pub struct Allowance {
    pub default: f64,
    pub per_figure: BTreeMap<String, f64>,
}

impl Allowance {
    fn of(&self, key: &str) -> f64 {
        self.per_figure.get(key).copied().unwrap_or(self.default)
    }

    /// From `--max-regression` values: `10%` (every figure) or `e2e_p99_ms=20%`.
    pub fn parse(flags: &[String]) -> Result<Allowance, String> {
        let mut a = Allowance {
            default: 0.10,
            per_figure: BTreeMap::new(),
        };
        for flag in flags {
            let (key, pct) = match flag.split_once('=') {
                Some((k, p)) => (Some(k.trim()), p),
                None => (None, flag.as_str()),
            };
            let share = pct
                .trim()
                .trim_end_matches('%')
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0 && *v <= 1000.0)
                .ok_or_else(|| {
                    format!(
                        "--max-regression {flag}: expected a percentage such as 10% (0 to 1000)"
                    )
                })?
                / 100.0;
            match key {
                None => a.default = share,
                Some(k) if gates().any(|g| g.key == k) => {
                    a.per_figure.insert(k.to_string(), share);
                }
                Some(k) => {
                    return Err(format!(
                        "--max-regression {flag}: unknown or ungated figure {k}; gated figures: {}",
                        gates().map(|g| g.key).collect::<Vec<_>>().join(", ")
                    ));
                }
            }
        }
        Ok(a)
    }
}

/// One figure of one scope, judged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Judgement {
    pub scope: String,
    pub figure: &'static str,
    pub baseline: f64,
    pub candidate: f64,
    /// (candidate − baseline) / baseline.
    pub change: f64,
    pub regressed: bool,
    /// Why (or why not), in a few words.
    pub why: String,
}

/// A figure `compare` judges, and which way is better.
struct Gate {
    key: &'static str,
    higher_is_better: bool,
}

/// The gated headline figures of runs and matrix cells, and a capacity search's answer.
fn gates() -> impl Iterator<Item = Gate> {
    let headline = FIGURES.iter().filter(|f| f.gated).map(|f| Gate {
        key: f.key,
        higher_is_better: f.higher_is_better,
    });
    let capacity = [
        Gate {
            key: "max_sustainable_per_s",
            higher_is_better: true,
        },
        Gate {
            key: "min_consumers",
            higher_is_better: false,
        },
    ];
    headline.chain(capacity)
}

/// Compares every gated figure of every scope the two results share.
pub fn judge(baseline: &Figures, candidate: &Figures, allowance: &Allowance) -> Vec<Judgement> {
    let mut out = Vec::new();
    for (scope, base) in baseline {
        let Some(cand) = candidate.get(scope) else {
            continue;
        };
        for f in gates() {
            let (Some(b), Some(c)) = (base.get(f.key), cand.get(f.key)) else {
                continue;
            };
            let (b, c) = (comparable(b), comparable(c));
            if b.is_empty() || c.is_empty() {
                continue;
            }
            let (bm, cm) = (median(&b), median(&c));
            let change = if bm == cm || bm == 0.0 {
                0.0
            } else {
                (cm - bm) / bm
            };
            let worse_by = if f.higher_is_better { -change } else { change };
            let allowed = allowance.of(f.key);
            let (regressed, why) = if f.key == "lost" {
                (
                    cm > 0.0,
                    if cm > 0.0 {
                        "jobs were lost".to_string()
                    } else {
                        "none lost".into()
                    },
                )
            } else if worse_by <= 0.0 {
                (
                    false,
                    if worse_by < 0.0 {
                        "better".into()
                    } else {
                        "unchanged".into()
                    },
                )
            } else if worse_by <= allowed {
                (false, format!("worse, within {:.0}%", allowed * 100.0))
            } else if b.len() > 1 && c.len() > 1 && overlaps(&b, &c, f.higher_is_better) {
                (false, "worse, but within the spread of the repeats".into())
            } else {
                let test = if b.len() > 1 && c.len() > 1 {
                    "beyond the spread of the repeats"
                } else {
                    "single runs: no spread to judge noise by"
                };
                (
                    true,
                    format!(
                        "worse by {:.1}% (> {:.0}%), {test}",
                        worse_by * 100.0,
                        allowed * 100.0
                    ),
                )
            };
            out.push(Judgement {
                scope: scope.clone(),
                figure: f.key,
                baseline: bm,
                candidate: cm,
                change,
                regressed,
                why,
            });
        }
    }
    out
}

/// Whether the candidate's range reaches the baseline's on the better side: its best run is
/// at least as good as the baseline's worst.
fn overlaps(b: &[f64], c: &[f64], higher_is_better: bool) -> bool {
    let (bmin, bmax) = range(b);
    let (cmin, cmax) = range(c);
    if higher_is_better {
        cmax >= bmin
    } else {
        cmin <= bmax
    }
}

fn range(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(*x), hi.max(*x))
        })
}

/// The values that were measured (NaN: no data). Infinity stays: a consumer search that
/// found no count is worse than any count.
fn comparable(v: &[f64]) -> Vec<f64> {
    v.iter().copied().filter(|x| !x.is_nan()).collect()
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// Where a named baseline is kept (`--save-baseline NAME`, `--baseline NAME`), as criterion
/// keeps its baselines: `results/baselines/NAME`.
pub fn baseline_dir(name: &str) -> Result<std::path::PathBuf, String> {
    let ok = !name.is_empty()
        && name.len() <= 100
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        && !name.starts_with('.');
    if !ok {
        return Err(format!(
            "baseline name {name:?}: use 1 to 100 letters, digits, '-', '_' or '.' (not first)"
        ));
    }
    Ok(Path::new("results").join("baselines").join(name))
}

/// Saves a results directory as the baseline `name`, replacing an older one.
pub fn save_baseline(results: &Path, name: &str) -> Result<std::path::PathBuf> {
    let target = baseline_dir(name).map_err(anyhow::Error::msg)?;
    if target.exists() {
        std::fs::remove_dir_all(&target)
            .with_context(|| format!("replacing {}", target.display()))?;
    }
    copy_tree(results, &target)?;
    Ok(target)
}

fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let dest = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &dest)?;
        } else {
            std::fs::copy(entry.path(), &dest)
                .with_context(|| format!("copying {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// The judgements as a Markdown table (for the terminal and `GITHUB_STEP_SUMMARY`).
pub fn markdown(judgements: &[Judgement], baseline: &str, candidate: &str) -> String {
    let regressions = judgements.iter().filter(|j| j.regressed).count();
    let mut md = format!(
        "# dbq-bench compare\n\nBaseline `{baseline}`, candidate `{candidate}`: {}.\n\n| scope | figure | baseline | candidate | change | verdict |\n|---|---|---|---|---|---|\n",
        if regressions == 0 {
            "no regression".to_string()
        } else {
            format!("**{regressions} regression(s)**")
        }
    );
    for j in judgements {
        md.push_str(&format!(
            "| {} | {} | {:.2} | {:.2} | {:+.1}% | {}{} |\n",
            j.scope,
            j.figure,
            j.baseline,
            j.candidate,
            j.change * 100.0,
            if j.regressed { "REGRESSED: " } else { "ok: " },
            j.why
        ));
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(scope: &str, pairs: &[(&'static str, &[f64])]) -> Figures {
        let mut f = Figures::new();
        f.insert(
            scope.into(),
            pairs.iter().map(|(k, v)| (*k, v.to_vec())).collect(),
        );
        f
    }

    #[test]
    fn a_drop_beyond_the_allowance_and_the_spread_regresses() {
        let a = Allowance::parse(&[]).unwrap();
        let base = figures("run", &[("throughput_per_s", &[1000.0, 1050.0, 980.0])]);
        let slower = figures("run", &[("throughput_per_s", &[700.0, 720.0, 690.0])]);
        let j = judge(&base, &slower, &a);
        assert!(j[0].regressed, "{j:?}");
        // Within the spread of noisy repeats: not a regression.
        let noisy = figures("run", &[("throughput_per_s", &[700.0, 990.0, 850.0])]);
        assert!(!judge(&base, &noisy, &a)[0].regressed);
        // Latency: higher is worse.
        let base = figures("run", &[("e2e_p99_ms", &[10.0])]);
        let cand = figures("run", &[("e2e_p99_ms", &[10.5])]);
        assert!(!judge(&base, &cand, &a)[0].regressed, "5% is within 10%");
        let cand = figures("run", &[("e2e_p99_ms", &[13.0])]);
        assert!(judge(&base, &cand, &a)[0].regressed);
    }

    #[test]
    fn any_lost_job_regresses_and_allowances_parse() {
        let a = Allowance::parse(&["5%".into(), "e2e_p99_ms=50%".into()]).unwrap();
        assert_eq!(a.of("throughput_per_s"), 0.05);
        assert_eq!(a.of("e2e_p99_ms"), 0.5);
        let j = judge(
            &figures("run", &[("lost", &[0.0])]),
            &figures("run", &[("lost", &[1.0])]),
            &a,
        );
        assert!(j[0].regressed);
        assert!(Allowance::parse(&["fast".into()]).is_err());
        assert!(
            Allowance::parse(&["p99=10%".into()])
                .unwrap_err()
                .contains("unknown or ungated figure p99")
        );
    }
}
