//! `dbq-bench matrix`: runs the cells (or merges cells run elsewhere) and prints the
//! comparison.

use super::shell::{check_out, interruptible, out, outln};
use super::{BaselineArgs, OverrideArgs};
use clap::{Args, Subcommand};
use dbq_bench::error::ExitStatus;
use dbq_bench::matrix::{self, MatrixRequest, comparison::Comparison};
use dbq_bench::report::artifact::Document;
use dbq_bench::scenario::EnvDefaults;
use dbq_bench::status;
use std::path::PathBuf;

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct MatrixArgs {
    #[command(subcommand)]
    merge: Option<MatrixCommand>,
    /// Scenario file (TOML).
    #[arg(required = true)]
    scenario: Option<PathBuf>,
    /// An axis of cells: one cell per value, e.g. --vary queue.variant=seed,batch,notify.
    /// Repeat the flag for more axes (cells are their product); added after the scenario's
    /// [matrix] axes.
    #[arg(long = "vary", value_name = "KEY=V1,V2,…")]
    vary: Vec<String>,
    /// Runs of every cell, interleaved [default: matrix.repeat, else 1].
    #[arg(long, value_name = "N")]
    repeat: Option<u32>,
    /// Results directory [default: results/<UTC time>-matrix-<scenario name>].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Run only cell I (numbered from 0), e.g. from a CI matrix or a Kubernetes Indexed Job
    /// (JOB_COMPLETION_INDEX); combine the directories with `matrix merge`.
    #[arg(long, value_name = "I", env = "DBQ_MATRIX_CELL")]
    cell: Option<usize>,
    /// No status lines and no comparison on the terminal (files are still written).
    #[arg(long, short)]
    quiet: bool,
    #[command(flatten)]
    baselines: BaselineArgs,
    #[command(flatten)]
    overrides: OverrideArgs,
}

#[derive(Subcommand)]
enum MatrixCommand {
    /// Build the comparison from matrix directories whose cells ran separately (--cell I).
    Merge {
        /// Matrix results directories (each with cells/).
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Where to write comparison.* (created when missing) [default: the first DIR].
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
}

/// `matrix merge`: the comparison of cells run in several places.
fn merge(dirs: Vec<PathBuf>, out: Option<PathBuf>, quiet: bool) -> ExitStatus {
    let out = out.unwrap_or_else(|| dirs[0].clone());
    let merged = Comparison::from_dirs(&dirs).and_then(|c| c.write(&out).map(|_| c));
    match merged {
        Ok(c) => {
            if !quiet {
                out!("{}", c.markdown());
                outln!("\ncomparison {}", out.display());
            }
            if c.lost_jobs() {
                ExitStatus::RunFailed
            } else {
                ExitStatus::Ok
            }
        }
        Err(e) => {
            eprintln!("error: matrix merge: {e:#}");
            ExitStatus::BadInput
        }
    }
}

/// The request, checked before anything runs.
fn request(args: &MatrixArgs, scenario: PathBuf) -> Result<MatrixRequest, String> {
    args.baselines.check()?;
    check_out(args.out.as_deref())?;
    let extra_axes = args
        .vary
        .iter()
        .map(|flag| matrix::axis_from_flag(flag).map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    let name = scenario
        .file_stem()
        .map_or("matrix".into(), |s| s.to_string_lossy().to_string());
    Ok(MatrixRequest {
        overrides: args.overrides.overrides(),
        env: EnvDefaults::from_env(),
        scenario_axes: true,
        extra_axes,
        repeat: args.repeat,
        out_dir: args
            .out
            .clone()
            .unwrap_or_else(|| dbq_bench::run::default_out_dir(&format!("matrix-{name}"))),
        only_cell: args.cell,
        status: status::for_command(args.quiet),
        scenario,
    })
}

pub async fn command(mut args: MatrixArgs) -> ExitStatus {
    if let Some(MatrixCommand::Merge { dirs, out }) = args.merge.take() {
        return merge(dirs, out, args.quiet);
    }
    let Some(scenario) = args.scenario.take() else {
        eprintln!("error: matrix: a scenario file is required");
        return ExitStatus::BadInput;
    };
    let planned =
        request(&args, scenario).and_then(|r| r.plan().map(|p| (r, p)).map_err(|e| e.to_string()));
    let (request, plan) = match planned {
        Ok(rp) => rp,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitStatus::BadInput;
        }
    };
    match matrix::run(&request, &plan, &interruptible()).await {
        Ok(outcome) => {
            if !args.quiet {
                out!("{}", outcome.comparison.markdown());
                outln!("\nresults    {}", request.out_dir.display());
            }
            if outcome.interrupted {
                ExitStatus::Interrupted
            } else if outcome.comparison.lost_jobs() {
                ExitStatus::RunFailed
            } else {
                args.baselines.apply(&request.out_dir)
            }
        }
        Err(f) => {
            eprintln!("error: {f}");
            f.exit_status()
        }
    }
}
