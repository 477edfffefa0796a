//! `dbq-bench calibrate`: pgbench and the harness side by side, draining a prefilled table
//! (is the load machine fast enough?) or, with `--fresh-table`, holding open-loop rates on
//! fresh tables (does the harness's answer agree with an independent load's?).

use super::OverrideArgs;
use super::shell::{check_out, interruptible, out, outln};
use clap::Args;
use dbq_bench::calibrate::{self, CalibrateRequest, FreshRequest, pgbench};
use dbq_bench::error::ExitStatus;
use dbq_bench::report::artifact::Document;
use dbq_bench::scenario::{EnvDefaults, FirstVacuum, Plan, load_plan};
use dbq_bench::status::{self, Status};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Args)]
pub struct CalibrateArgs {
    /// Scenario whose database settings are used (its load is replaced) [default:
    /// scenarios/baseline.toml; with --fresh-table scenarios/capacity.toml, whose
    /// consumers, handler, idle poll and producers both tools then use].
    scenario: Option<PathBuf>,
    /// Connection counts: pgbench clients and dbq-bench workers (draining a prefilled
    /// table).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,4,16",
        value_name = "N,N,…"
    )]
    connections: Vec<u32>,
    /// Instead of draining: offer each rate, open loop, to a fresh queue table, through
    /// pgbench and through the harness, and compare what each did to the table (completed
    /// rate, most jobs waiting, dead tuples, claim cost, how claims read the table).
    #[arg(long, value_delimiter = ',', value_name = "RATE,RATE,…")]
    fresh_table: Vec<f64>,
    /// With --fresh-table: when each fresh table gets its first vacuum (late: autovacuum
    /// kept off it for one autovacuum_naptime, then one VACUUM paced as autovacuum's).
    #[arg(long, value_enum, default_value_t = FirstVacuum::Late)]
    first_vacuum: FirstVacuum,
    /// How long each tool runs, each time [default: 10s draining; 3m with --fresh-table].
    #[arg(long, value_parser = humantime::parse_duration)]
    duration: Option<Duration>,
    /// Jobs prefilled before each tool drains (enough that neither runs dry).
    #[arg(long, default_value_t = 150_000)]
    prefill: u64,
    /// Runs of each tool at each connection count or rate, in turn (pgbench, dbq-bench,
    /// pgbench, …) [default: 3 draining, 1 with --fresh-table].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=20))]
    repeats: Option<u32>,
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

/// What calibrate was asked to do, checked before anything starts.
enum Request {
    Drain(CalibrateRequest),
    Fresh(FreshRequest),
}

/// What both kinds of request share: the plan, pgbench, the results directory.
struct Common {
    plan: Plan,
    pgbench: PathBuf,
    out_dir: PathBuf,
    status: Status,
}

fn common(args: &CalibrateArgs, default_scenario: &str) -> Result<Common, String> {
    let scenario = args
        .scenario
        .clone()
        .unwrap_or_else(|| PathBuf::from(default_scenario));
    let plan = load_plan(
        &scenario,
        &args.overrides.overrides(),
        &EnvDefaults::from_env(),
    )
    .map_err(|e| e.to_string())?;
    let Some(pgbench) = args.pgbench.clone().or_else(pgbench::find) else {
        return Err("pgbench not found on PATH or in /usr/lib/postgresql/*/bin; install PostgreSQL's client tools (Debian: postgresql-client) or pass --pgbench PATH".into());
    };
    check_out(args.out.as_deref())?;
    Ok(Common {
        plan,
        pgbench,
        out_dir: args
            .out
            .clone()
            .unwrap_or_else(|| dbq_bench::run::default_out_dir("calibrate")),
        status: status::for_command(args.quiet),
    })
}

fn request(args: CalibrateArgs) -> Result<Request, String> {
    let duration = args.duration;
    if duration.is_some_and(|d| d < Duration::from_secs(1)) {
        return Err("--duration: must be at least 1s".into());
    }
    if !args.fresh_table.is_empty() {
        if args
            .fresh_table
            .iter()
            .any(|r| !(r.is_finite() && (1.0..=1_000_000.0).contains(r)))
        {
            return Err("--fresh-table: each rate must be between 1 and 1000000 jobs/s".into());
        }
        let c = common(&args, "scenarios/capacity.toml")?;
        let request = FreshRequest {
            plan: c.plan,
            rates: args.fresh_table,
            duration: duration.unwrap_or(Duration::from_secs(180)),
            first_vacuum: args.first_vacuum,
            repeats: args.repeats.unwrap_or(1),
            pgbench: c.pgbench,
            out_dir: c.out_dir,
            status: c.status,
        };
        request.check().map_err(|e| e.to_string())?;
        return Ok(Request::Fresh(request));
    }
    if args.connections.is_empty() || args.connections.iter().any(|c| !(1..=1000).contains(c)) {
        return Err("--connections: each count must be between 1 and 1000".into());
    }
    let c = common(&args, "scenarios/baseline.toml")?;
    Ok(Request::Drain(CalibrateRequest {
        out_dir: c.out_dir,
        plan: c.plan,
        connections: args.connections,
        duration: duration.unwrap_or(Duration::from_secs(10)),
        prefill: args.prefill,
        repeats: args.repeats.unwrap_or(3),
        pgbench: c.pgbench,
        status: c.status,
    }))
}

pub async fn command(args: CalibrateArgs) -> ExitStatus {
    let request = match request(args) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitStatus::BadInput;
        }
    };
    let shutdown = interruptible();
    let (done, out_dir): (Result<String, _>, &Path) = match &request {
        Request::Drain(r) => (
            calibrate::run(r, &shutdown).await.map(|c| c.markdown()),
            &r.out_dir,
        ),
        Request::Fresh(r) => (
            calibrate::fresh::run(r, &shutdown)
                .await
                .map(|c| c.markdown()),
            &r.out_dir,
        ),
    };
    match done {
        Ok(markdown) => {
            out!("{markdown}");
            outln!("\nresults    {}", out_dir.display());
            ExitStatus::Ok
        }
        Err(f) => {
            eprintln!("error: {f}");
            f.exit_status()
        }
    }
}
