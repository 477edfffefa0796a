//! `dbq-bench run`: one scenario, its results, and the verdict as an exit code.

use super::shell::{append_to_step_summary, check_out, interruptible, outln, worst};
use super::{BaselineArgs, OverrideArgs};
use clap::Args;
use dbq_bench::error::{ExitStatus, Failure};
use dbq_bench::report::{Summary, terminal};
use dbq_bench::run::{RunOptions, run};
use dbq_bench::scenario::{EnvDefaults, load_plan};
use dbq_bench::status;
use std::io::IsTerminal;
use std::path::PathBuf;

mod repeated;

#[derive(Args)]
pub struct RunArgs {
    /// Scenario file (TOML); see scenarios/ and docs/reference.md.
    scenario: PathBuf,
    /// Results directory [default: results/<UTC time>-<scenario name>].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Keep the run's schema (and a server the run started) instead of removing them.
    #[arg(long)]
    keep: bool,
    /// No progress line and no summary on the terminal (results are still written).
    #[arg(long, short)]
    quiet: bool,
    /// Print summary.json on stdout instead of the terminal summary (for scripts).
    #[arg(long)]
    json: bool,
    /// Stop the load as soon as a threshold fails (judged after each phase); exit 99.
    #[arg(long)]
    abort_on_fail: bool,
    /// A capacity result (a `dbq-bench capacity` directory or its capacity.json) for the
    /// verdict to hold against the article's "few hundred per second" instead of this run's
    /// own rate.
    #[arg(long, value_name = "DIR")]
    capacity: Option<PathBuf>,
    /// Run the scenario N times, each in a fresh schema of one server, for a regression gate
    /// that can tell a change from noise (--save-baseline, --baseline). Writes each run to
    /// DIR/cells/00-scenario/r<k>/ and their spread to DIR/comparison.{json,md,html}.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    repeat: Option<u32>,
    #[command(flatten)]
    baselines: BaselineArgs,
    #[command(flatten)]
    overrides: OverrideArgs,
}

/// The options of a run, checked before anything starts (the results directory once the
/// scenario is known to be good).
fn options(args: &RunArgs) -> Result<RunOptions, String> {
    args.baselines.check()?;
    let capacity = match args.capacity.as_deref() {
        Some(dir) => {
            Some(dbq_bench::capacity::citation(dir).map_err(|e| format!("--capacity: {e}"))?)
        }
        None => None,
    };
    Ok(RunOptions {
        out_dir: args.out.clone(),
        keep: args.keep,
        status: status::for_command(args.quiet),
        progress_bar: !args.quiet && std::io::stderr().is_terminal(),
        worker_exe: None,
        abort_on_fail: args.abort_on_fail,
        capacity,
    })
}

pub async fn command(args: RunArgs) -> ExitStatus {
    if let Some(n) = args.repeat.filter(|n| *n > 1) {
        return repeated::command(&args, n).await;
    }
    let opts = match options(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitStatus::BadInput;
        }
    };
    let plan = match load_plan(
        &args.scenario,
        &args.overrides.overrides(),
        &EnvDefaults::from_env(),
    ) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitStatus::BadInput;
        }
    };
    let fresh_out = match check_out(args.out.as_deref()) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitStatus::BadInput;
        }
    };
    match run(&plan, &opts, interruptible()).await {
        Ok(outcome) => {
            let s = &outcome.results.summary;
            if s.fatal_error.is_some()
                && let Some(why) = s.incomplete_because()
            {
                eprintln!("error: {why}");
            }
            if args.json {
                outln!("{}", serde_json::to_string_pretty(s).unwrap_or_default());
            } else if !args.quiet {
                outln!("{}", terminal::render(s));
                outln!("results    {}", outcome.out_dir.display());
            }
            // What the run leaves behind is said even when nothing else is: on stderr
            // under --quiet or --json.
            let kept = [
                outcome
                    .kept_queue
                    .as_ref()
                    .map(|q| format!("kept       schema {}", q.namespace())),
                outcome
                    .kept_server
                    .as_ref()
                    .map(|s| format!("kept       server {s}")),
            ];
            for line in kept.into_iter().flatten() {
                if args.json || args.quiet {
                    eprintln!("{line}");
                } else {
                    outln!("{line}");
                }
            }
            if let Ok(md) = std::fs::read(outcome.out_dir.join("report.md")) {
                append_to_step_summary(&md);
            }
            let gate = args.baselines.apply(&outcome.out_dir);
            worst(exit_status(s), gate)
        }
        Err(f) => {
            fresh_out.discard_if_empty();
            match &f {
                Failure::Interrupted => eprintln!(
                    "dbq-bench: interrupted before the load started; nothing was measured"
                ),
                other => eprintln!("error: {other}"),
            }
            f.exit_status()
        }
    }
}

/// 130 interrupted; 99 a threshold failed (or stopped the run early); 1 the run failed
/// (accounting, drain timeout); 0 otherwise.
pub(super) fn exit_status(s: &Summary) -> ExitStatus {
    if s.interrupted {
        ExitStatus::Interrupted
    } else if s.aborted_by_threshold.is_some() {
        ExitStatus::ThresholdFailed
    } else if !s.accounting.ok || !s.complete {
        ExitStatus::RunFailed
    } else if !s.thresholds_passed {
        ExitStatus::ThresholdFailed
    } else {
        ExitStatus::Ok
    }
}
