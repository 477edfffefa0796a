//! `dbq-bench compare BASELINE CANDIDATE`: a regression gate between two results measured
//! the same way (two runs, two sets of repeated runs, two matrices, or a run against a saved
//! baseline). `gate` judges; `stats` says how sure it may be; this module reads results and
//! keeps baselines.

mod alike;
pub mod export;
mod gate;
mod markdown;
pub mod stats;

pub use alike::{Difference, Identity, Key, Measured, Sorted, allowable, differences};
pub use gate::{GateRules, Judgement, Outcome, Verdict, judge};
pub use markdown::markdown;

use crate::backend::design_files::DesignFiles;
use crate::capacity::Capacity;
use crate::matrix::comparison::Comparison;
use crate::metrics::LibraryWorkers;
use crate::report::Summary;
use crate::report::design::DesignRecord;
use crate::report::headline::FIGURES;
use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One scope's figures (the run, or a matrix cell): each figure's value per repeat.
#[derive(Debug, Clone, Default)]
pub struct ScopeFigures {
    pub values: BTreeMap<&'static str, Vec<f64>>,
    /// The design's idle poll, when consumers sleep it out (see `DesignRecord::idle_poll_ms`).
    pub idle_poll_ms: Option<u64>,
    /// The runs' directory names, read from a directory of runs: two sides whose runs have
    /// the same names were measured in pairs, side by side, and are compared pair by pair.
    pub run_names: Vec<String>,
    /// What the runs measured: compared before any figure is (see [`differences`]).
    pub identity: Identity,
}

/// Figures by scope: `run` (one run, or repeats of one), `cell <i> <label>`, `capacity`.
pub type Figures = BTreeMap<String, ScopeFigures>;

/// Reads a results directory: a run's `summary.json`, a matrix's `comparison.json` (a matrix
/// of one unvaried cell, as `run --repeat` writes, is the scope `run`), a capacity search's
/// `capacity.json`, or a directory whose subdirectories each hold one run's `summary.json`
/// (repeats measured by a script, e.g. interleaved with another binary's: runs of the same
/// name on both sides are then compared as pairs).
pub fn read(dir: &Path) -> Result<Figures> {
    if dir.join("comparison.json").is_file() {
        read_matrix(dir)
    } else if dir.join("capacity.json").is_file() {
        read_capacity(dir)
    } else if dir.join("summary.json").is_file() {
        read_runs("run", &[dir.to_path_buf()])
    } else {
        let runs = run_subdirs(dir)?;
        if runs.is_empty() {
            bail!(
                "{} holds no summary.json (a run), comparison.json (a matrix or repeated run), capacity.json (a capacity search) or subdirectories of runs",
                dir.display()
            );
        }
        let mut figures = read_runs("run", &runs)?;
        if let Some(scope) = figures.get_mut("run") {
            scope.run_names = runs
                .iter()
                .filter_map(|r| r.file_name().map(|n| n.to_string_lossy().to_string()))
                .collect();
        }
        Ok(figures)
    }
}

fn read_matrix(dir: &Path) -> Result<Figures> {
    let text = std::fs::read_to_string(dir.join("comparison.json"))?;
    let c: Comparison = serde_json::from_str(&text)
        .with_context(|| format!("reading {}/comparison.json", dir.display()))?;
    let one_unvaried = c.cells.len() == 1 && c.cells[0].cell.options.is_empty();
    let mut out = Figures::new();
    for cell in c.cells {
        let scope = if one_unvaried {
            "run".to_string()
        } else {
            format!("cell {} {}", cell.cell.index, cell.cell.label)
        };
        let figures = out.entry(scope).or_default();
        figures.idle_poll_ms = cell.design.as_ref().and_then(|d| d.idle_poll_ms);
        for run in &cell.runs {
            let design = run.design.as_ref().or(cell.design.as_ref());
            let name = run.dir.file_name().map(|n| n.to_string_lossy().to_string());
            let measured = Measured {
                scenario: run.scenario.clone(),
                design: design.map(DesignRecord::identity),
                server: run.server.clone(),
                files: design.and_then(files_of),
                library: run.library.clone(),
                storage: None,
            };
            figures.identity.add(
                measured,
                run.complete,
                &name.unwrap_or_else(|| "a run".into()),
            );
        }
        for f in &FIGURES {
            let values = cell.runs.iter().map(|r| r.figures.get(f.key).copied());
            figures
                .values
                .insert(f.key, values.map(|v| v.unwrap_or(f64::NAN)).collect());
        }
    }
    Ok(out)
}

fn read_capacity(dir: &Path) -> Result<Figures> {
    let text = std::fs::read_to_string(dir.join("capacity.json"))?;
    let c: Capacity = serde_json::from_str(&text)
        .with_context(|| format!("reading {}/capacity.json", dir.display()))?;
    let mut figures = ScopeFigures::default();
    let scenario = Path::new(&c.scenario)
        .file_name()
        .map_or_else(|| c.scenario.clone(), |n| n.to_string_lossy().to_string());
    let measured = Measured {
        scenario: Some(scenario),
        design: c.design.as_ref().map(DesignRecord::identity),
        server: c.server.clone(),
        files: c.design.as_ref().and_then(files_of),
        library: None,
        storage: None,
    };
    figures.identity.add(measured, !c.interrupted, "the search");
    match c.search.consumers_for_rate {
        Some(_) => {
            let fewest = c.min_consumers.map_or(f64::INFINITY, f64::from);
            figures.values.insert("min_consumers", vec![fewest]);
        }
        None => {
            let max = c.max_sustainable_per_s.unwrap_or(0.0);
            figures.values.insert("max_sustainable_per_s", vec![max]);
        }
    }
    Ok(Figures::from([("capacity".to_string(), figures)]))
}

/// Each run's figures as one repeat of `scope`.
fn read_runs(scope: &str, dirs: &[PathBuf]) -> Result<Figures> {
    let mut figures = ScopeFigures::default();
    for dir in dirs {
        let text = std::fs::read_to_string(dir.join("summary.json"))
            .with_context(|| format!("reading {}/summary.json", dir.display()))?;
        let s: Summary = serde_json::from_str(&text)
            .with_context(|| format!("reading {}/summary.json", dir.display()))?;
        figures.idle_poll_ms = s.design.idle_poll_ms;
        let name = dir.file_name().map(|n| n.to_string_lossy().to_string());
        let measured = Measured {
            scenario: Some(s.scenario.name.clone()),
            design: Some(s.design.identity()),
            server: Some(s.database.release()),
            files: files_of(&s.design),
            library: LibraryWorkers::named(&s.library_workers),
            storage: Some(s.database.storage.clone()).filter(|s| !s.is_empty()),
        };
        figures.identity.add(
            measured,
            s.complete,
            &name.unwrap_or_else(|| "the run".into()),
        );
        for f in &FIGURES {
            figures.values.entry(f.key).or_default().push((f.read)(&s));
        }
    }
    Ok(Figures::from([(scope.to_string(), figures)]))
}

/// A custom design's files as its record names them.
fn files_of(design: &DesignRecord) -> Option<DesignFiles> {
    Some(DesignFiles {
        name: design.custom_name.clone().unwrap_or_default(),
        sha256: design.custom_sha256.clone()?,
        files: design.custom_files.clone(),
    })
}

/// The subdirectories of `dir` that hold a run, in name order.
fn run_subdirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut runs = Vec::new();
    for entry in entries {
        let path = entry?.path();
        if path.join("summary.json").is_file() {
            runs.push(path);
        }
    }
    runs.sort();
    Ok(runs)
}

/// Where a named baseline is kept (`--save-baseline NAME`, `--baseline NAME`), as criterion
/// keeps its baselines: `results/baselines/NAME`.
pub fn baseline_dir(name: &str) -> Result<PathBuf, String> {
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
pub fn save_baseline(results: &Path, name: &str) -> Result<PathBuf> {
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
