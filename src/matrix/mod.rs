//! `dbq-bench matrix`: the same scenario with some keys changed, cell by cell, on one server,
//! repeated and interleaved (A B C A B C) so machine drift spreads evenly; then one
//! comparison of every cell against its baseline.
//!
//! Every cell's runs are ordinary results directories under `DIR/cells/<i>-<label>/r<k>/`,
//! beside a `cell.json` that says which keys the cell changed. The comparison is built from
//! those directories alone, so cells run elsewhere (`--cell I` on several machines) merge
//! the same way (`matrix merge`).

pub mod comparison;

use crate::error::{Failure, InputError};
use crate::provider::Server;
use crate::run::{self, RunOptions, run_on};
use crate::scenario::{
    Assignment, EnvDefaults, MatrixOption, Overrides, Plan, ScenarioFile, plan_of,
};
use crate::status::Status;
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What one cell changes, as saved in its `cell.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellSpec {
    pub index: usize,
    /// The options' labels joined with " / ".
    pub label: String,
    /// One label per axis.
    pub options: Vec<String>,
    /// `key=value` assignments, applied after the user's `--set`s.
    pub sets: Vec<String>,
    /// The cell this one is compared with: the first option of the first axis, the same
    /// options of the others (itself for the baseline cells).
    pub baseline: usize,
    /// The options' changes as typed assignments (what planning applies; `sets` is their
    /// record).
    #[serde(skip)]
    pub assignments: Vec<Assignment>,
}

/// The cells of a matrix: the cartesian product of `axes` (the last axis varies fastest).
pub fn cells(axes: &[Vec<MatrixOption>]) -> Vec<CellSpec> {
    let mut combos: Vec<Vec<&MatrixOption>> = vec![Vec::new()];
    for axis in axes {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                axis.iter().map(move |o| {
                    let mut c = c.clone();
                    c.push(o);
                    c
                })
            })
            .collect();
    }
    // Cells with the first option of the first axis come first, one per combination of the
    // other axes: the baseline of cell i is cell i modulo their number.
    let stride: usize = axes.iter().skip(1).map(Vec::len).product();
    combos
        .into_iter()
        .enumerate()
        .map(|(index, opts)| CellSpec {
            index,
            baseline: index % stride.max(1),
            label: if opts.is_empty() {
                "scenario".into()
            } else {
                opts.iter()
                    .map(|o| o.label.as_str())
                    .collect::<Vec<_>>()
                    .join(" / ")
            },
            options: opts.iter().map(|o| o.label.clone()).collect(),
            sets: opts
                .iter()
                .flat_map(|o| o.set.iter().map(|(k, v)| format!("{k}={v}")))
                .collect(),
            assignments: opts
                .iter()
                .flat_map(|o| {
                    o.set.iter().map(|(k, v)| Assignment {
                        key: k.clone(),
                        value: v.clone(),
                    })
                })
                .collect(),
        })
        .collect()
}

/// An axis from `--vary key=v1,v2,…`: one option per value, labelled `key=value`.
pub fn axis_from_flag(flag: &str) -> Result<Vec<MatrixOption>, InputError> {
    let source = format!("--vary {flag}");
    let (key, values) = flag.split_once('=').ok_or_else(|| {
        InputError::whole(
            &source,
            "expected key.path=value1,value2,… (e.g. queue.variant=seed,batch)",
        )
    })?;
    let key = key.trim();
    let values: Vec<&str> = values
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .collect();
    if key.is_empty() || values.is_empty() {
        return Err(InputError::whole(
            &source,
            "expected a key and at least one value: key.path=value1,value2,…",
        ));
    }
    Ok(values
        .iter()
        .map(|v| MatrixOption {
            label: format!("{key}={v}"),
            set: BTreeMap::from([(key.to_string(), toml_value(v))]),
        })
        .collect())
}

/// A flag value read as TOML, or as a plain string when it is not TOML (as `--set` does).
fn toml_value(raw: &str) -> toml::Value {
    toml::from_str::<toml::Table>(&format!("v = {raw}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_string()))
}

/// A file-system friendly form of a cell's label.
fn slug(cell: &CellSpec) -> String {
    let s: String = cell
        .label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!(
        "{:02}-{}",
        cell.index,
        s.chars().take(60).collect::<String>()
    )
}

/// How a matrix is run.
pub struct MatrixRequest {
    pub scenario: PathBuf,
    /// The user's overrides; each cell adds its own `sets` after them.
    pub overrides: Overrides,
    pub env: EnvDefaults,
    /// Use the scenario's `[matrix]` axes (false for `run --repeat`: the scenario as it is).
    pub scenario_axes: bool,
    /// Extra axes from `--vary`, after the scenario's own.
    pub extra_axes: Vec<Vec<MatrixOption>>,
    pub repeat: Option<u32>,
    pub out_dir: PathBuf,
    /// Run only this cell (to spread a matrix over machines).
    pub only_cell: Option<usize>,
    pub status: Status,
}

/// The validated plans of every cell, and how often to run them.
pub struct MatrixPlan {
    pub cells: Vec<(CellSpec, Plan)>,
    pub repeat: u32,
}

impl MatrixRequest {
    /// Every cell's plan, validated before anything runs; the scenario file is read once.
    pub fn plan(&self) -> Result<MatrixPlan, InputError> {
        let file = ScenarioFile::read(&self.scenario)?;
        let base = plan_of(&file, &self.overrides, &[], "", &self.env)?;
        let mut axes = if self.scenario_axes {
            base.resolved.matrix.axes.clone()
        } else {
            Vec::new()
        };
        axes.extend(self.extra_axes.iter().cloned());
        let repeat = self.repeat.or(base.resolved.matrix.repeat).unwrap_or(1);
        if !(1..=100).contains(&repeat) {
            return Err(InputError::new(
                file.source(),
                "matrix.repeat",
                format!("must be between 1 and 100, got {repeat}"),
            ));
        }
        let all = cells(&axes);
        if let Some(i) = self.only_cell
            && i >= all.len()
        {
            return Err(InputError::whole(
                format!("--cell {i}"),
                format!("the matrix has cells 0 to {}", all.len() - 1),
            ));
        }
        let mut planned = Vec::new();
        for cell in all {
            let source = format!(
                "{} (matrix cell {}: {})",
                file.source(),
                cell.index,
                cell.label
            );
            let plan = plan_of(
                &file,
                &self.overrides,
                &cell.assignments,
                &source,
                &self.env,
            )
            .map_err(|mut e| {
                if e.source == file.source() {
                    e.source = source.clone();
                }
                e
            })?;
            planned.push((cell, plan));
        }
        Ok(MatrixPlan {
            cells: planned,
            repeat,
        })
    }
}

/// What a matrix run leaves: the comparison, and whether it was cut short.
pub struct MatrixOutcome {
    pub comparison: comparison::Comparison,
    pub interrupted: bool,
}

/// Runs every cell `repeat` times, interleaved, each run in a fresh schema of a shared server
/// (one per distinct `[database]`: cells whose engine or settings differ get a server of
/// their own, started once), writing each run's results as it finishes; then writes the
/// comparison.
pub async fn run(
    request: &MatrixRequest,
    matrix: &MatrixPlan,
    shutdown: &CancellationToken,
) -> Result<MatrixOutcome, Failure> {
    std::fs::create_dir_all(&request.out_dir)
        .with_context(|| format!("creating {}", request.out_dir.display()))?;
    let chosen: Vec<&(CellSpec, Plan)> = matrix
        .cells
        .iter()
        .filter(|(c, _)| request.only_cell.is_none_or(|i| i == c.index))
        .collect();
    for (cell, _) in &chosen {
        let dir = request.out_dir.join("cells").join(slug(cell));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let json = serde_json::to_string_pretty(cell).context("writing cell.json")?;
        std::fs::write(dir.join("cell.json"), json).context("writing cell.json")?;
    }
    let servers = match provision_all(&chosen, &request.status).await {
        Ok(servers) => servers,
        Err((servers, e)) => {
            tear_down(servers, &request.status).await;
            return Err(e);
        }
    };
    let result = run_cells(request, matrix.repeat, &chosen, &servers, shutdown).await;
    tear_down(servers, &request.status).await;
    let interrupted = result?;
    let comparison = comparison::Comparison::from_dirs(std::slice::from_ref(&request.out_dir))
        .map_err(|e| Failure::Run(e.context("building the comparison")))?;
    comparison
        .write(&request.out_dir)
        .map_err(|e| Failure::Run(e.context("writing the comparison")))?;
    Ok(MatrixOutcome {
        comparison,
        interrupted,
    })
}

/// A server for each distinct `[database]` of the cells, in order of first use. On an error
/// the servers already started are handed back, to be torn down.
async fn provision_all(
    cells: &[&(CellSpec, Plan)],
    status: &Status,
) -> Result<Servers, (Servers, Failure)> {
    let mut servers: Servers = Vec::new();
    for (_, plan) in cells {
        if servers.iter().any(|(db, _)| db == &plan.database) {
            continue;
        }
        match run::provision(plan, status).await {
            Ok(server) => servers.push((plan.database.clone(), server)),
            Err(e) => return Err((servers, e)),
        }
    }
    Ok(servers)
}

/// The matrix's servers, each with the `[database]` it serves.
type Servers = Vec<(crate::scenario::DatabasePlan, Arc<Server>)>;

async fn tear_down(servers: Servers, status: &Status) {
    for (_, server) in servers {
        run::release(server, false, status).await;
    }
}

/// The runs, repeat by repeat and cell by cell; true when Ctrl-C cut them short.
async fn run_cells(
    request: &MatrixRequest,
    repeat: u32,
    cells: &[&(CellSpec, Plan)],
    servers: &Servers,
    shutdown: &CancellationToken,
) -> Result<bool, Failure> {
    let total = repeat as usize * cells.len();
    let mut done = 0;
    for r in 0..repeat {
        for (cell, plan) in cells {
            if shutdown.is_cancelled() {
                return Ok(true);
            }
            done += 1;
            request.status.line(&format!(
                "matrix run {done}/{total}: cell {} ({}), repeat {}",
                cell.index,
                cell.label,
                r + 1
            ));
            let opts = RunOptions {
                out_dir: Some(run_dir(&request.out_dir, cell, r)),
                ..Default::default()
            };
            let outcome = match servers.iter().find(|(db, _)| db == &plan.database) {
                Some((_, s)) => run_on(plan, &opts, s, shutdown).await,
                None => crate::run::run(plan, &opts, shutdown.clone()).await,
            };
            match outcome {
                Ok(o) => {
                    let s = &o.results.summary;
                    let e2e = &s.latency_ms.end_to_end;
                    // Prefilled jobs have no intended start, so a drain has no e2e latency.
                    let e2e = match e2e.count {
                        0 => "e2e –".to_string(),
                        _ => format!("e2e p50 {:.1} ms, p99 {:.1} ms", e2e.p50, e2e.p99),
                    };
                    request.status.line(&format!(
                        "  {:.0} jobs/s completed, {e2e}, lost {}",
                        s.throughput.completed_per_s, s.jobs.lost
                    ));
                }
                Err(Failure::Interrupted) => return Ok(true),
                Err(e) => return Err(e),
            }
        }
    }
    Ok(false)
}

/// Where one run of a cell goes.
fn run_dir(out: &Path, cell: &CellSpec, repeat: u32) -> PathBuf {
    out.join("cells")
        .join(slug(cell))
        .join(format!("r{}", repeat + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opt(label: &str, key: &str, v: &str) -> MatrixOption {
        MatrixOption {
            label: label.into(),
            set: BTreeMap::from([(key.into(), toml_value(v))]),
        }
    }

    #[test]
    fn cells_are_the_product_of_the_axes_last_axis_fastest() {
        let axes = vec![
            vec![
                opt("seed", "queue.variant", "seed"),
                opt("batch", "queue.variant", "batch"),
            ],
            vec![
                opt("open", "phases.0.rate", "300"),
                opt("closed", "phases.0.rate", "0"),
            ],
        ];
        let c = cells(&axes);
        let labels: Vec<&str> = c.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "seed / open",
                "seed / closed",
                "batch / open",
                "batch / closed"
            ]
        );
        assert_eq!(c[3].sets, ["queue.variant=\"batch\"", "phases.0.rate=0"]);
        let baselines: Vec<usize> = c.iter().map(|c| c.baseline).collect();
        assert_eq!(
            baselines,
            [0, 1, 0, 1],
            "batch / closed is compared with seed / closed"
        );
        assert_eq!(cells(&[]).len(), 1, "no axes: the scenario itself");
    }

    #[test]
    fn vary_flags_become_axes() {
        let a = axis_from_flag("queue.claim_batch=10,100").unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!(a[1].label, "queue.claim_batch=100");
        assert_eq!(a[1].set["queue.claim_batch"], toml::Value::Integer(100));
        assert_eq!(
            axis_from_flag("queue.variant=seed").unwrap()[0].set["queue.variant"],
            toml::Value::String("seed".into())
        );
        assert!(axis_from_flag("queue.variant").is_err());
        assert!(axis_from_flag("queue.variant=").is_err());
    }
}
