//! `dbq-bench run --repeat N`: the scenario N times on one server, as a matrix of one
//! unvaried cell, so a regression gate has a spread to judge noise by.

use super::super::shell::{check_out, interruptible, out, outln, worst};
use super::{RunArgs, exit_status};
use dbq_bench::error::ExitStatus;
use dbq_bench::matrix::{self, MatrixRequest};
use dbq_bench::report::Summary;
use dbq_bench::report::artifact::Document;
use dbq_bench::scenario::EnvDefaults;
use dbq_bench::status;

/// The flags that describe one run, refused with repeats.
fn refuse_single_run_flags(args: &RunArgs) -> Result<(), String> {
    let single = [
        (args.keep, "--keep"),
        (args.json, "--json"),
        (args.abort_on_fail, "--abort-on-fail"),
        (args.capacity.is_some(), "--capacity"),
    ];
    match single.iter().find(|(set, _)| *set) {
        Some((_, flag)) => Err(format!(
            "--repeat: {flag} applies to a single run; drop one of them"
        )),
        None => Ok(()),
    }
}

fn request(args: &RunArgs, n: u32) -> Result<MatrixRequest, String> {
    refuse_single_run_flags(args)?;
    args.baselines.check()?;
    check_out(args.out.as_deref())?;
    let name = args
        .scenario
        .file_stem()
        .map_or("run".into(), |s| s.to_string_lossy().to_string());
    Ok(MatrixRequest {
        scenario: args.scenario.clone(),
        overrides: args.overrides.overrides(),
        env: EnvDefaults::from_env(),
        scenario_axes: false,
        extra_axes: Vec::new(),
        repeat: Some(n),
        out_dir: args
            .out
            .clone()
            .unwrap_or_else(|| dbq_bench::run::default_out_dir(&format!("{name}-x{n}"))),
        only_cell: None,
        status: status::for_command(args.quiet),
    })
}

pub async fn command(args: &RunArgs, n: u32) -> ExitStatus {
    let planned =
        request(args, n).and_then(|r| r.plan().map(|p| (r, p)).map_err(|e| e.to_string()));
    let (request, plan) = match planned {
        Ok(rp) => rp,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitStatus::BadInput;
        }
    };
    let outcome = match matrix::run(&request, &plan, &interruptible()).await {
        Ok(o) => o,
        Err(f) => {
            eprintln!("error: {f}");
            return f.exit_status();
        }
    };
    if !args.quiet {
        out!("{}", outcome.comparison.markdown());
        outln!("\nresults    {}", request.out_dir.display());
    }
    if outcome.interrupted {
        return ExitStatus::Interrupted;
    }
    let runs = outcome.comparison.cells.iter().flat_map(|c| c.runs.iter());
    let mut status = ExitStatus::Ok;
    for run in runs {
        status = worst(status, run_status(&run.dir));
    }
    worst(status, args.baselines.apply(&request.out_dir))
}

/// One run's exit status, from its summary.
fn run_status(dir: &std::path::Path) -> ExitStatus {
    let summary = std::fs::read_to_string(dir.join("summary.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Summary>(&t).ok());
    match summary {
        Some(s) => exit_status(&s),
        None => {
            eprintln!("error: {}: no readable summary.json", dir.display());
            ExitStatus::RunFailed
        }
    }
}
