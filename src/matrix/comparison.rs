//! The comparison of a matrix's cells: every repeat's headline figures, their median and
//! spread, and ratios to each cell's baseline. Built from results directories only, and
//! written as `comparison.json`, `.md`, `.csv` and `.html` from one table layout.

use super::CellSpec;
use crate::report::Summary;
use crate::report::artifact::{self, Document, Exporter};
use crate::report::design::DesignRecord;
use crate::report::headline::FIGURES;
use crate::report::limit::LimitKind;
use crate::report::page::{self, Callout, Page, Section, Tone};
use crate::report::svg::bars;
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Median, smallest and largest of one figure over a cell's repeats (NaN, written as
/// `null`, when the runs did not measure it).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    #[serde(deserialize_with = "null_as_nan")]
    pub median: f64,
    #[serde(deserialize_with = "null_as_nan")]
    pub min: f64,
    #[serde(deserialize_with = "null_as_nan")]
    pub max: f64,
}

/// JSON has no NaN: serde_json writes it as `null`; read `null` back as NaN.
fn null_as_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

fn nulls_as_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<BTreeMap<String, f64>, D::Error> {
    let m = BTreeMap::<String, Option<f64>>::deserialize(d)?;
    Ok(m.into_iter()
        .map(|(k, v)| (k, v.unwrap_or(f64::NAN)))
        .collect())
}

impl Spread {
    fn of(values: &[f64]) -> Spread {
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let median = match v.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        };
        Spread {
            median,
            min: v.first().copied().unwrap_or(f64::NAN),
            max: v.last().copied().unwrap_or(f64::NAN),
        }
    }
}

/// One repeat of a cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellRun {
    pub dir: PathBuf,
    /// The scenario's name (absent in results of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    /// The design the run measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub design: Option<DesignRecord>,
    /// The server's engine and release (`PostgreSQL 17`; absent in results of older
    /// versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The queue library the workers said they are (`pgqueuer 1.6.0`), when they are one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library: Option<String>,
    pub complete: bool,
    /// The proof found nothing wrong: jobs a drain timeout left queued in both views are
    /// unfinished, not lost (a backlog drained for a fixed window leaves them on purpose).
    pub accounting_ok: bool,
    pub producers_kept_schedule: bool,
    /// The workers' statements scanned the queue table in the measured phases: the run
    /// measured that plan, not the queue.
    #[serde(default)]
    pub table_scanned: bool,
    /// What limited the run's measured phases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<LimitKind>,
    #[serde(deserialize_with = "nulls_as_nan")]
    pub figures: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellComparison {
    #[serde(flatten)]
    pub cell: CellSpec,
    /// The design its runs measured (from their summaries; absent for results of older
    /// versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub design: Option<DesignRecord>,
    pub runs: Vec<CellRun>,
    pub figures: BTreeMap<String, Spread>,
    /// Median over the baseline's median, per figure.
    pub ratio_to_baseline: BTreeMap<String, f64>,
    /// A job was lost, or the proof failed, in some repeat.
    pub lost_jobs: bool,
    /// Producers missed their schedule in some repeat: the load generator may have limited
    /// the offered load, so open-loop figures understate what the queue could do.
    pub load_generator_behind: bool,
    /// The workers' claim scanned the table in some repeat: its figures measure that plan.
    #[serde(default)]
    pub table_scanned: bool,
}

impl CellComparison {
    /// What limited its repeats: `the workers`, or `the workers ×2, the load machine ×1`
    /// when they differ.
    pub fn limits(&self) -> String {
        let mut counts: Vec<(LimitKind, usize)> = Vec::new();
        for kind in self.runs.iter().filter_map(|r| r.limit) {
            match counts.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, n)) => *n += 1,
                None => counts.push((kind, 1)),
            }
        }
        match counts.as_slice() {
            [] => "–".into(),
            [(kind, _)] => kind.label().into(),
            many => many
                .iter()
                .map(|(k, n)| format!("{} ×{n}", k.label()))
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub schema_version: u32,
    pub cells: Vec<CellComparison>,
    /// Index of the cell with the highest median `throughput_per_s`.
    pub best_throughput: Option<usize>,
    /// Index of the cell with the lowest median `e2e_p99_ms`.
    pub best_e2e_p99: Option<usize>,
}

impl Comparison {
    /// Reads every `cells/*/cell.json` and its `r*/summary.json` under `dirs`; cells with the
    /// same index from several directories (cells run on several machines) are merged.
    pub fn from_dirs(dirs: &[PathBuf]) -> Result<Comparison> {
        let mut by_index: BTreeMap<usize, (CellSpec, Vec<CellRun>)> = BTreeMap::new();
        for dir in dirs {
            let cells_dir = dir.join("cells");
            let entries = std::fs::read_dir(&cells_dir)
                .with_context(|| format!("{} holds no matrix cells", cells_dir.display()))?;
            for entry in entries.flatten() {
                let cell_dir = entry.path();
                let Ok(text) = std::fs::read_to_string(cell_dir.join("cell.json")) else {
                    continue;
                };
                let spec: CellSpec = serde_json::from_str(&text)
                    .with_context(|| format!("reading {}/cell.json", cell_dir.display()))?;
                let runs = read_runs(&cell_dir)?;
                let slot = by_index
                    .entry(spec.index)
                    .or_insert_with(|| (spec.clone(), Vec::new()));
                if slot.0.sets != spec.sets {
                    bail!(
                        "cell {} differs between directories ({} vs {}): merge results of one matrix",
                        spec.index,
                        slot.0.label,
                        spec.label
                    );
                }
                slot.1.extend(runs);
            }
        }
        if by_index.is_empty() {
            bail!("no matrix cells found in {}", join_paths(dirs));
        }
        let mut cells: Vec<CellComparison> = by_index
            .into_values()
            .map(|(cell, runs)| {
                let figures = FIGURES
                    .iter()
                    .map(|f| {
                        let values: Vec<f64> = runs.iter().map(|r| r.figures[f.key]).collect();
                        (f.key.to_string(), Spread::of(&values))
                    })
                    .collect();
                CellComparison {
                    design: runs.iter().find_map(|r| r.design.clone()),
                    lost_jobs: runs
                        .iter()
                        .any(|r| !r.accounting_ok || r.figures["lost"] > 0.0),
                    load_generator_behind: runs.iter().any(|r| !r.producers_kept_schedule),
                    table_scanned: runs.iter().any(|r| r.table_scanned),
                    cell,
                    runs,
                    figures,
                    ratio_to_baseline: BTreeMap::new(),
                }
            })
            .collect();
        link_baselines(&mut cells);
        let pick = |key: &str, higher: bool| {
            cells
                .iter()
                .filter(|c| !c.runs.is_empty())
                .max_by(|a, b| {
                    let (x, y) = (a.figures[key].median, b.figures[key].median);
                    if higher {
                        x.total_cmp(&y)
                    } else {
                        y.total_cmp(&x)
                    }
                })
                .map(|c| c.cell.index)
        };
        Ok(Comparison {
            schema_version: 1,
            best_throughput: pick("throughput_per_s", true),
            best_e2e_p99: pick("e2e_p99_ms", false),
            cells,
        })
    }

    /// Some cell lost a job (the matrix fails, whatever its speed).
    pub fn lost_jobs(&self) -> bool {
        self.cells.iter().any(|c| c.lost_jobs)
    }

    /// Writes comparison.json, .md, .csv and .html into `dir` (created when missing).
    pub fn write(&self, dir: &Path) -> Result<()> {
        artifact::write(
            dir,
            self,
            &[
                &artifact::Json("comparison.json"),
                &artifact::Markdown("comparison.md"),
                &ComparisonCsv,
                &artifact::Html("comparison.html"),
            ],
        )
        .map(drop)
    }

    /// The one table every format shows: a header row, then one row per cell.
    fn table(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let mut header = vec!["cell".to_string(), "design".to_string(), "runs".to_string()];
        header.extend(FIGURES.iter().map(|f| f.heading.to_string()));
        header.push("limit".to_string());
        let rows = self
            .cells
            .iter()
            .map(|c| {
                let scanned = if c.table_scanned { " (scanned)" } else { "" };
                let mut row = vec![
                    format!("{} {}{scanned}", c.cell.index, c.cell.label),
                    c.design
                        .as_ref()
                        .map_or("–".to_string(), DesignRecord::label),
                    c.runs.len().to_string(),
                ];
                for f in &FIGURES {
                    let s = c.figures[f.key];
                    let mut text = number(s.median);
                    if c.runs.len() > 1 && s.median.is_finite() {
                        text.push_str(&format!(" ({}–{})", number(s.min), number(s.max)));
                    }
                    if c.cell.baseline != c.cell.index
                        && let Some(r) = c.ratio_to_baseline.get(f.key)
                        && r.is_finite()
                    {
                        text.push_str(&format!(" {r:.2}×"));
                    }
                    row.push(text);
                }
                row.push(c.limits());
                row
            })
            .collect();
        (header, rows)
    }

    /// The sentences under the table: what is best, what is flagged.
    fn notes(&self) -> Vec<String> {
        let name = |i: Option<usize>| {
            i.and_then(|i| self.cells.iter().find(|c| c.cell.index == i))
                .map_or("none".to_string(), |c| {
                    format!("cell {} ({})", c.cell.index, c.cell.label)
                })
        };
        let mut notes = vec![
            format!(
                "Best on throughput (median jobs/s while busy): {}.",
                name(self.best_throughput)
            ),
            format!("Best on end-to-end p99: {}.", name(self.best_e2e_p99)),
            "Each figure is the median over the cell's runs, with the smallest and largest in \
             brackets when it ran more than once, and its ratio to the cell's baseline (the first \
             option of the first axis with the same other options). Runs were interleaved \
             across cells (A B C A B C)."
                .to_string(),
        ];
        for c in self.cells.iter().filter(|c| c.lost_jobs) {
            notes.push(format!(
                "Cell {} ({}) LOST JOBS in some run: its figures do not count.",
                c.cell.index, c.cell.label
            ));
        }
        for c in self.cells.iter().filter(|c| c.table_scanned) {
            notes.push(format!(
                "Cell {} ({}) (scanned): the workers' statements scanned the queue table sequentially in some run, so its figures measure that plan, not the queue (see the run's table_reads).",
                c.cell.index, c.cell.label
            ));
        }
        for c in self.cells.iter().filter(|c| c.load_generator_behind) {
            notes.push(format!(
                "Cell {} ({}): producers missed their schedule in some run, so its open-loop load may have been limited by the load generator.",
                c.cell.index, c.cell.label
            ));
        }
        notes
    }

    fn csv(&self) -> Result<String> {
        let mut w = csv::Writer::from_writer(Vec::new());
        let mut header: Vec<String> = ["index", "label", "design", "claim_batch", "runs"]
            .map(String::from)
            .to_vec();
        for f in &FIGURES {
            for part in ["median", "min", "max", "ratio"] {
                header.push(format!("{}_{part}", f.key));
            }
        }
        w.write_record(&header)?;
        for c in &self.cells {
            let mut row = vec![
                c.cell.index.to_string(),
                c.cell.label.clone(),
                c.design.as_ref().map_or(String::new(), DesignRecord::label),
                c.design
                    .as_ref()
                    .map_or(String::new(), |d| d.claim_batch.to_string()),
                c.runs.len().to_string(),
            ];
            for f in &FIGURES {
                let s = c.figures[f.key];
                row.extend([s.median, s.min, s.max].map(|v| v.to_string()));
                row.push(
                    c.ratio_to_baseline
                        .get(f.key)
                        .map_or(String::new(), |r| r.to_string()),
                );
            }
            w.write_record(&row)?;
        }
        Ok(String::from_utf8(w.into_inner()?)?)
    }

    /// The medians of a few figures as bar charts.
    fn charts(&self) -> String {
        let mut h = String::new();
        for (key, title) in [
            ("throughput_per_s", "Completed jobs/s while busy (median)"),
            ("e2e_p50_ms", "End-to-end p50, ms (median)"),
            ("e2e_p99_ms", "End-to-end p99, ms (median)"),
            ("dead_tuples_max", "Dead tuples, most seen (median)"),
            ("table_mb_end", "Table size at the end, MB (median)"),
        ] {
            let items: Vec<(String, f64)> = self
                .cells
                .iter()
                .map(|c| {
                    (
                        format!("{} {}", c.cell.index, c.cell.label),
                        c.figures[key].median,
                    )
                })
                .filter(|(_, v)| v.is_finite())
                .collect();
            h.push_str(&format!("<figure>{}</figure>", bars(title, &items)));
        }
        h
    }
}

impl Document for Comparison {
    fn markdown(&self) -> String {
        let (header, rows) = self.table();
        let mut md = String::from("# dbq-bench matrix: comparison\n\n");
        md.push_str(&page::markdown_table(&header, &rows));
        md.push('\n');
        for n in self.notes() {
            md.push_str(&format!("- {n}\n"));
        }
        md
    }

    fn page(&self) -> Page {
        let (header, rows) = self.table();
        let runs: usize = self.cells.iter().map(|c| c.runs.len()).sum();
        let lost = self.lost_jobs();
        let behind = self.cells.iter().any(|c| c.load_generator_behind);
        let mut callouts = vec![Callout {
            tone: Tone::of(!lost),
            label: "Accounting.".into(),
            text: if lost {
                "Some cell lost jobs: its figures do not count (see the notes).".into()
            } else {
                "Every run of every cell accounted for every job.".into()
            },
        }];
        if behind {
            callouts.push(Callout {
                tone: Tone::Warn,
                label: "Load generator.".into(),
                text: "In some runs the producers missed their schedule: those cells' open-loop figures may be limited by the harness (see the notes).".into(),
            });
        }
        Page {
            title: "dbq-bench matrix: comparison".into(),
            subtitle: format!("{} cell(s), {runs} run(s), interleaved", self.cells.len()),
            intro: None,
            callouts,
            sections: vec![
                Section::new("Cells", page::table(&header, &rows)),
                Section::new("Notes", page::notes(&self.notes())),
                Section::new("Charts", self.charts()),
            ],
        }
    }
}

/// `comparison.csv`: every figure's median, range and ratio, one row a cell.
struct ComparisonCsv;

impl Exporter<Comparison> for ComparisonCsv {
    fn file_name(&self) -> &'static str {
        "comparison.csv"
    }
    fn export(&self, c: &Comparison, out: &mut dyn std::io::Write) -> Result<()> {
        out.write_all(c.csv()?.as_bytes())?;
        Ok(())
    }
}

/// Each cell's ratios to its baseline (when the baseline's runs are here too).
fn link_baselines(cells: &mut [CellComparison]) {
    let medians: BTreeMap<usize, BTreeMap<String, Spread>> = cells
        .iter()
        .map(|c| (c.cell.index, c.figures.clone()))
        .collect();
    for c in cells.iter_mut() {
        if let Some(base) = medians.get(&c.cell.baseline) {
            c.ratio_to_baseline = FIGURES
                .iter()
                .map(|f| {
                    (
                        f.key.to_string(),
                        c.figures[f.key].median / base[f.key].median,
                    )
                })
                .filter(|(_, r)| r.is_finite())
                .collect();
        }
    }
}

/// Every `r*/summary.json` in a cell's directory, in repeat order.
fn read_runs(cell_dir: &Path) -> Result<Vec<CellRun>> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(cell_dir)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("summary.json").is_file())
        .collect();
    dirs.sort();
    dirs.into_iter()
        .map(|dir| {
            let text = std::fs::read_to_string(dir.join("summary.json"))?;
            let s: Summary = serde_json::from_str(&text)
                .with_context(|| format!("reading {}/summary.json", dir.display()))?;
            Ok(CellRun {
                scenario: Some(s.scenario.name.clone()),
                design: Some(s.design.clone()),
                server: Some(s.database.release()),
                library: crate::metrics::LibraryWorkers::named(&s.library_workers),
                complete: s.complete,
                accounting_ok: s.accounting.sound,
                producers_kept_schedule: s.verdict.producers_kept_schedule,
                table_scanned: s.verdict.table_scanned,
                limit: s.limit.as_ref().map(|l| l.kind),
                figures: FIGURES
                    .iter()
                    .map(|f| (f.key.to_string(), (f.read)(&s)))
                    .collect(),
                dir,
            })
        })
        .collect()
}

fn join_paths(dirs: &[PathBuf]) -> String {
    dirs.iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A figure for a table: no more digits than it deserves.
fn number(v: f64) -> String {
    if !v.is_finite() {
        "–".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_takes_the_median_of_odd_and_even_counts() {
        assert_eq!(Spread::of(&[3.0, 1.0, 2.0]).median, 2.0);
        assert_eq!(Spread::of(&[4.0, 1.0, 2.0, 3.0]).median, 2.5);
        let s = Spread::of(&[5.0, 1.0]);
        assert_eq!((s.min, s.max), (1.0, 5.0));
    }

    #[test]
    fn numbers_keep_sensible_digits() {
        assert_eq!(number(2912.4), "2912");
        assert_eq!(number(12.345), "12.3");
        assert_eq!(number(0.1234), "0.12");
        assert_eq!(number(f64::NAN), "–");
    }
}
