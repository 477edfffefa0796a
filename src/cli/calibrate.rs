//! `dbq-bench calibrate`: pgbench and the harness side by side.

use super::OverrideArgs;
use super::shell::{check_out, interruptible, out, outln};
use clap::Args;
use dbq_bench::calibrate::{self, CalibrateRequest};
use dbq_bench::error::ExitStatus;
use dbq_bench::report::artifact::Document;
use dbq_bench::scenario::{EnvDefaults, load_plan};
use dbq_bench::status;
use std::path::PathBuf;

#[derive(Args)]
pub struct CalibrateArgs {
    /// Scenario whose database settings are used (its load is replaced).
    #[arg(default_value = "scenarios/baseline.toml")]
    scenario: PathBuf,
    /// Connection counts: pgbench clients and dbq-bench workers.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,4,16",
        value_name = "N,N,…"
    )]
    connections: Vec<u32>,
    /// How long each tool runs at each connection count, each time.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    duration: std::time::Duration,
    /// Jobs prefilled before each tool runs (enough that neither runs dry).
    #[arg(long, default_value_t = 150_000)]
    prefill: u64,
    /// Runs of each tool at each connection count, in turn (pgbench, dbq-bench, pgbench, …);
    /// the table gives medians and the spread.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
    repeats: u32,
    /// The pgbench executable [default: on PATH, or beside PostgreSQL's server binaries].
    #[arg(long, value_name = "PATH")]
    pgbench: Option<PathBuf>,
    /// Results directory [default: results/<UTC time>-calibrate].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// No status lines on the terminal (the table is still printed and written).
    #[arg(long, short)]
    quiet: bool,
    #[command(flatten)]
    overrides: OverrideArgs,
}

/// The request, checked before anything starts.
fn request(args: CalibrateArgs) -> Result<CalibrateRequest, String> {
    if args.connections.is_empty() || args.connections.iter().any(|c| !(1..=1000).contains(c)) {
        return Err("--connections: each count must be between 1 and 1000".into());
    }
    if args.duration < std::time::Duration::from_secs(1) {
        return Err("--duration: must be at least 1s".into());
    }
    let plan = load_plan(
        &args.scenario,
        &args.overrides.overrides(),
        &EnvDefaults::from_env(),
    )
    .map_err(|e| e.to_string())?;
    let Some(pgbench) = args.pgbench.or_else(calibrate::find_pgbench) else {
        return Err("pgbench not found on PATH or in /usr/lib/postgresql/*/bin; install PostgreSQL's client tools (Debian: postgresql-client) or pass --pgbench PATH".into());
    };
    check_out(args.out.as_deref())?;
    Ok(CalibrateRequest {
        out_dir: args
            .out
            .unwrap_or_else(|| dbq_bench::run::default_out_dir("calibrate")),
        plan,
        connections: args.connections,
        duration: args.duration,
        prefill: args.prefill,
        repeats: args.repeats,
        pgbench,
        status: status::for_command(args.quiet),
    })
}

pub async fn command(args: CalibrateArgs) -> ExitStatus {
    let request = match request(args) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitStatus::BadInput;
        }
    };
    match calibrate::run(&request, &interruptible()).await {
        Ok(c) => {
            out!("{}", c.markdown());
            outln!("\nresults    {}", request.out_dir.display());
            ExitStatus::Ok
        }
        Err(f) => {
            eprintln!("error: {f}");
            f.exit_status()
        }
    }
}
