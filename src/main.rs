//! The `dbq-bench` command line. Parses arguments, loads scenarios, runs them and maps every
//! outcome to an exit code; all the work happens in the library.

/// Standard output without a panic when its reader has gone (`dbq-bench run … | head`):
/// the rest of the output is dropped and the command still ends as it would have.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($arg)*);
    }};
}
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

use clap::{Args, Parser, Subcommand};
use dbq_bench::error::{ExitStatus, Failure};
use dbq_bench::fleet::process;
use dbq_bench::report::{RunResults, Summary, terminal, write_all};
use dbq_bench::run::{RunOptions, run};
use dbq_bench::scenario::{EnvDefaults, Overrides, ProviderKind, load_plan};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

const EXIT_CODES: &str = "Exit codes: 0 ok; 1 the run failed (database error, lost or duplicated jobs, drain timed out); \
2 bad input (scenario, flag, URL or results directory); 99 a threshold failed; 130 interrupted (partial results written).";

/// Load-test and benchmark a job queue built inside PostgreSQL (SELECT … FOR UPDATE SKIP LOCKED).
///
/// A scenario file describes the database, the queue variant, producer and consumer fleets
/// and a list of phases. `run` provisions PostgreSQL, drives open-loop load through the
/// phases, drains the queue, proves that every committed job finished, and writes results.
#[derive(Parser)]
#[command(name = "dbq-bench", version, after_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario and write results to a directory.
    Run(RunArgs),
    /// A worker process, started by `run` when consumers.processes = true.
    #[command(hide = true)]
    Worker,
    /// Render every report format again from a results directory's saved data.
    Report {
        /// A results directory written by `run`.
        dir: PathBuf,
        /// No summary on the terminal.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Check scenario files without running them (one line per file).
    Validate {
        /// Scenario files (TOML).
        #[arg(required = true)]
        scenarios: Vec<PathBuf>,
        #[command(flatten)]
        overrides: OverrideArgs,
    },
    /// Compare queue designs: run the scenario once per cell (keys changed with --vary or the
    /// scenario's [matrix]), repeated and interleaved, on one server; write a comparison.
    ///
    /// Writes DIR/cells/<i>-<label>/r<k>/ (every run's results) and DIR/comparison.{json,md,csv,html}.
    /// Exit 1 when any cell lost a job.
    Matrix(MatrixArgs),
    /// Find the highest offered rate the queue sustains while an objective holds: steps of
    /// doubling rates until one breaks it, then bisection to ±10%.
    ///
    /// Writes DIR/steps/<k>-<rate>-per-s/ (every step's results) and DIR/capacity.{json,md,html}.
    Capacity(CapacityArgs),
    /// Is this load machine fast enough? Runs pgbench and dbq-bench on the same server, the
    /// same prefilled seed table and the same claim + complete transaction (0 ms handler)
    /// at each connection count, and prints their jobs/s and CPU per job side by side.
    ///
    /// Writes DIR/calibrate.{json,md} and each harness run's results in
    /// DIR/harness-<connections>-<run>/.
    Calibrate(CalibrateArgs),
    /// Regression gate: compare two results measured the same way (runs or matrices) and
    /// exit 99 when a headline figure got worse beyond its allowance and beyond the noise.
    ///
    /// Gated figures: jobs/s (while busy and over the window), e2e p50/p99, claim p50, lost
    /// jobs (any lost job is a regression). With repeats on both sides, a change within the
    /// spread of the repeats is not a regression.
    Compare {
        /// Results directory of the baseline (a run's, or a matrix's).
        baseline: PathBuf,
        /// Results directory of the candidate, measured the same way.
        candidate: PathBuf,
        /// How much worse a figure may get: `10%` (every figure; the default) or
        /// `e2e_p99_ms=25%` (one figure). Repeatable.
        #[arg(long = "max-regression", value_name = "[FIGURE=]PCT")]
        max_regression: Vec<String>,
        /// Print only the regressions.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Print a shell completion script, e.g. `dbq-bench completions bash > ~/.local/share/bash-completion/completions/dbq-bench`.
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
    /// Print the JSON Schema of scenario files, for editors that validate and complete TOML
    /// (e.g. Taplo / Even Better TOML: `#:schema ./dbq-bench.schema.json` atop a scenario).
    Schema,
}

#[derive(Args)]
struct RunArgs {
    /// Scenario file (TOML); see scenarios/ and the README's scenario reference.
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
    #[command(flatten)]
    baselines: BaselineArgs,
    #[command(flatten)]
    overrides: OverrideArgs,
}

#[derive(Args)]
struct BaselineArgs {
    /// Keep these results as baseline NAME (in results/baselines/NAME), to compare later
    /// runs with --baseline NAME.
    #[arg(long, value_name = "NAME")]
    save_baseline: Option<String>,
    /// Compare these results with the saved baseline NAME (as `dbq-bench compare` does) and
    /// exit 99 when something regressed.
    #[arg(long, value_name = "NAME")]
    baseline: Option<String>,
    /// How much worse a figure may get than the baseline (see `compare --max-regression`).
    #[arg(
        long = "max-regression",
        value_name = "[FIGURE=]PCT",
        requires = "baseline"
    )]
    max_regression: Vec<String>,
}

impl BaselineArgs {
    /// Checks the names and allowances before anything runs.
    fn check(&self) -> Result<(), String> {
        for name in self.save_baseline.iter().chain(self.baseline.iter()) {
            dbq_bench::compare::baseline_dir(name)?;
        }
        dbq_bench::compare::Allowance::parse(&self.max_regression).map(|_| ())
    }

    /// Saves and/or gates the results in `dir`; the exit status the gate asks for.
    fn apply(&self, dir: &std::path::Path) -> ExitStatus {
        let mut status = ExitStatus::Ok;
        if let Some(name) = &self.baseline {
            status = match dbq_bench::compare::baseline_dir(name) {
                Ok(base) if base.exists() => {
                    compare_command(&base, dir, &self.max_regression, false)
                }
                Ok(base) => {
                    eprintln!(
                        "error: --baseline {name}: no saved baseline at {} (save one with --save-baseline {name})",
                        base.display()
                    );
                    ExitStatus::BadInput
                }
                Err(e) => {
                    eprintln!("error: --baseline: {e}");
                    ExitStatus::BadInput
                }
            };
        }
        if let Some(name) = &self.save_baseline {
            match dbq_bench::compare::save_baseline(dir, name) {
                Ok(at) => eprintln!("dbq-bench: saved as baseline {name} ({})", at.display()),
                Err(e) => {
                    eprintln!("error: --save-baseline {name}: {e:#}");
                    status = ExitStatus::RunFailed;
                }
            }
        }
        status
    }
}

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
struct MatrixArgs {
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

#[derive(Args)]
struct CapacityArgs {
    /// Scenario file (TOML); its [capacity] table tunes the search, its phases are replaced
    /// by each step's warm-up and measured window.
    scenario: PathBuf,
    /// A condition of the objective on each step's measured window, as a threshold:
    /// --slo end_to_end.p99=<250ms. Repeatable; adds to (or replaces the same metric of)
    /// the scenario's capacity.slo.
    #[arg(long = "slo", value_name = "METRIC=COND")]
    slo: Vec<String>,
    /// Search the consumer count instead of the rate: the fewest consumers that meet the
    /// objective at RATE jobs/s (1, 2, 4, … up to capacity.max_consumers, then bisected).
    #[arg(long, value_name = "RATE")]
    consumers_for: Option<f64>,
    /// Results directory [default: results/<UTC time>-capacity-<scenario name>].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// No status lines and no summary on the terminal (files are still written).
    #[arg(long, short)]
    quiet: bool,
    #[command(flatten)]
    baselines: BaselineArgs,
    #[command(flatten)]
    overrides: OverrideArgs,
}

#[derive(Args)]
struct CalibrateArgs {
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

#[derive(Subcommand)]
enum MatrixCommand {
    /// Build the comparison from matrix directories whose cells ran separately (--cell I).
    Merge {
        /// Matrix results directories (each with cells/).
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Where to write comparison.* [default: the first DIR].
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
}

#[derive(Args)]
struct OverrideArgs {
    /// Where PostgreSQL comes from [default: the scenario's database.provider, else auto].
    #[arg(long, value_enum, value_name = "PROVIDER")]
    db: Option<ProviderKind>,
    /// Server for the url provider. Beats database.url; DATABASE_URL is used when neither is set.
    #[arg(long, value_name = "URL")]
    database_url: Option<String>,
    /// Image for the container provider. Beats database.image; DBQ_POSTGRES_IMAGE is used
    /// when neither is set; the default is postgres:17.
    #[arg(long, value_name = "IMAGE")]
    image: Option<String>,
    /// Override a scenario key, e.g. --set consumers.count=16 --set phases.1.rate=max.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
}

impl OverrideArgs {
    fn overrides(&self) -> Overrides {
        Overrides {
            sets: self.sets.clone(),
            provider: self.db,
            image: self.image.clone(),
            database_url: self.database_url.clone(),
        }
    }
}

fn env_defaults() -> EnvDefaults {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    EnvDefaults {
        image: var("DBQ_POSTGRES_IMAGE"),
        mariadb_image: var("DBQ_MARIADB_IMAGE"),
        database_url: var("DATABASE_URL"),
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return flag_error(e),
    };
    report_panics_in_one_line();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "error".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let status = match cli.command {
        Command::Validate {
            scenarios,
            overrides,
        } => validate(&scenarios, &overrides.overrides()),
        Command::Report { dir, quiet } => report_command(&dir, quiet),
        Command::Matrix(args) => on_runtime(matrix_command(args)),
        Command::Calibrate(args) => on_runtime(calibrate_command(args)),
        Command::Capacity(args) => on_runtime(capacity_command(args)),
        Command::Compare {
            baseline,
            candidate,
            max_regression,
            quiet,
        } => compare_command(&baseline, &candidate, &max_regression, quiet),
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(
                shell,
                &mut <Cli as clap::CommandFactory>::command(),
                "dbq-bench",
                &mut script,
            );
            print_out(&script)
        }
        Command::Schema => {
            let schema = schemars::schema_for!(dbq_bench::scenario::Scenario);
            let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
            text.push('\n');
            print_out(text.as_bytes())
        }
        Command::Run(args) => on_runtime(run_command(args)),
        Command::Worker => {
            // The runtime is never dropped: that would wait for the blocking read of stdin,
            // which only ends when the runner closes it. The process exits instead.
            let runtime = tokio::runtime::Runtime::new();
            let result = match &runtime {
                Ok(rt) => rt.block_on(process::worker_main()),
                Err(e) => Err(anyhow::anyhow!("cannot start the async runtime: {e}")),
            };
            if let Err(e) = &result {
                eprintln!("error: {e:#}");
            }
            std::process::exit(if result.is_ok() {
                0
            } else {
                ExitStatus::RunFailed as i32
            });
        }
    };
    ExitCode::from(status as u8)
}

/// Runs a command on a new runtime. A panic (a bug) ends it with one line and exit 1, after
/// dropping the schemas it created on servers it does not own; servers it started stop as
/// their handles drop.
fn on_runtime(command: impl Future<Output = ExitStatus> + Send + 'static) -> ExitStatus {
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitStatus::RunFailed;
        }
    };
    runtime.block_on(async {
        match tokio::spawn(command).await {
            Ok(status) => status,
            Err(_) => {
                dbq_bench::db::connect::drop_open_schemas().await;
                ExitStatus::RunFailed
            }
        }
    })
}

/// A panic is a bug: one line that says so and where, instead of a backtrace hint.
fn report_panics_in_one_line() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!(
            "error: internal error (a bug in dbq-bench, please report it): {}{at}",
            message.replace('\n', " ")
        );
    }));
}

/// Writes to stdout; a reader that went away (`| head`) is not an error.
fn print_out(bytes: &[u8]) -> ExitStatus {
    use std::io::Write;
    match std::io::stdout().lock().write_all(bytes) {
        Ok(()) => ExitStatus::Ok,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitStatus::Ok,
        Err(e) => {
            eprintln!("error: writing to stdout: {e}");
            ExitStatus::RunFailed
        }
    }
}

fn validate(files: &[PathBuf], overrides: &Overrides) -> ExitStatus {
    let env = env_defaults();
    let mut status = ExitStatus::Ok;
    for f in files {
        match load_plan(f, overrides, &env) {
            Ok(plan) => outln!(
                "ok: {} ({} phase(s), {:.0} s measured, {} producer(s), {} consumer(s))",
                f.display(),
                plan.phases.len(),
                plan.measured_duration().as_secs_f64(),
                plan.producers.count,
                plan.consumers.count
            ),
            Err(e) => {
                eprintln!("error: {e}");
                status = ExitStatus::BadInput;
            }
        }
    }
    status
}

/// A results directory given with `--out` must be one that can be written: refused before
/// anything starts, rather than after a run whose results then have nowhere to go.
fn check_out(out: Option<&std::path::Path>) -> Result<(), String> {
    let Some(dir) = out else { return Ok(()) };
    if dir.exists() && !dir.is_dir() {
        return Err(format!(
            "--out {}: is a file, not a directory (give a directory; it is created when missing)",
            dir.display()
        ));
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("--out {}: cannot create it: {e}", dir.display()))?;
    let probe = dir.join(".dbq-bench-write-check");
    std::fs::write(&probe, b"")
        .map_err(|e| format!("--out {}: cannot write in it: {e}", dir.display()))?;
    std::fs::remove_file(&probe).ok();
    Ok(())
}

async fn run_command(args: RunArgs) -> ExitStatus {
    if let Err(e) = args.baselines.check() {
        eprintln!("error: {e}");
        return ExitStatus::BadInput;
    }
    let capacity = match args.capacity.as_deref().map(dbq_bench::capacity::citation) {
        Some(Err(e)) => {
            eprintln!("error: --capacity: {e}");
            return ExitStatus::BadInput;
        }
        Some(Ok(c)) => Some(c),
        None => None,
    };
    let plan = match load_plan(&args.scenario, &args.overrides.overrides(), &env_defaults()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitStatus::BadInput;
        }
    };
    if let Err(e) = check_out(args.out.as_deref()) {
        eprintln!("error: {e}");
        return ExitStatus::BadInput;
    }
    let shutdown = CancellationToken::new();
    tokio::spawn(watch_signals(shutdown.clone()));
    let opts = RunOptions {
        out_dir: args.out,
        keep: args.keep,
        status: !args.quiet,
        progress_bar: !args.quiet && std::io::stderr().is_terminal(),
        worker_exe: None,
        abort_on_fail: args.abort_on_fail,
        capacity,
    };
    match run(&plan, &opts, shutdown).await {
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
                if let Some(schema) = &outcome.kept_schema {
                    outln!("kept       schema {}", schema.name);
                }
                if let Some(server) = &outcome.kept_server {
                    outln!("kept       server {server}");
                }
            }
            append_step_summary(&outcome.out_dir);
            let gate = args.baselines.apply(&outcome.out_dir);
            worst(exit_status(s), gate)
        }
        Err(f) => {
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

/// `calibrate`: pgbench and the harness side by side.
async fn calibrate_command(args: CalibrateArgs) -> ExitStatus {
    use dbq_bench::calibrate::{self, CalibrateRequest};
    if let Err(e) = check_out(args.out.as_deref()) {
        eprintln!("error: {e}");
        return ExitStatus::BadInput;
    }
    if args.connections.is_empty() || args.connections.iter().any(|c| !(1..=1000).contains(c)) {
        eprintln!("error: --connections: each count must be between 1 and 1000");
        return ExitStatus::BadInput;
    }
    if args.duration < std::time::Duration::from_secs(1) {
        eprintln!("error: --duration: must be at least 1s");
        return ExitStatus::BadInput;
    }
    let Some(pgbench) = args.pgbench.or_else(calibrate::find_pgbench) else {
        eprintln!(
            "error: pgbench not found on PATH or in /usr/lib/postgresql/*/bin; install PostgreSQL's client tools (Debian: postgresql-client) or pass --pgbench PATH"
        );
        return ExitStatus::BadInput;
    };
    let request = CalibrateRequest {
        out_dir: args
            .out
            .unwrap_or_else(|| dbq_bench::run::default_out_dir("calibrate")),
        scenario: args.scenario,
        overrides: args.overrides.overrides(),
        env: env_defaults(),
        connections: args.connections,
        duration: args.duration,
        prefill: args.prefill,
        repeats: args.repeats,
        pgbench,
        status: !args.quiet,
    };
    let shutdown = CancellationToken::new();
    tokio::spawn(watch_signals(shutdown.clone()));
    match calibrate::run(&request, &shutdown).await {
        Ok(c) => {
            out!("{}", calibrate::markdown(&c));
            outln!("\nresults    {}", request.out_dir.display());
            ExitStatus::Ok
        }
        Err(f) => {
            eprintln!("error: {f}");
            f.exit_status()
        }
    }
}

/// Help and version as clap prints them; a mistake in the flags as one line (the allowed
/// values included) and exit 2, like every other bad input.
fn flag_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
    }
    let text = e.to_string();
    let parts: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with("For more information") && !l.starts_with("Usage:")
        })
        .collect();
    eprintln!("{} (see --help)", parts.join(" "));
    ExitCode::from(ExitStatus::BadInput as u8)
}

/// `capacity`: searches the offered rate and prints the answer.
async fn capacity_command(args: CapacityArgs) -> ExitStatus {
    if let Err(e) = args
        .baselines
        .check()
        .and_then(|_| check_out(args.out.as_deref()))
    {
        eprintln!("error: {e}");
        return ExitStatus::BadInput;
    }
    use dbq_bench::capacity::{self, CapacityRequest, Search};
    let overrides = args.overrides.overrides();
    let source = args.scenario.display().to_string();
    let section = match dbq_bench::scenario::load::load(&args.scenario, &overrides) {
        Ok(s) => s.capacity,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitStatus::BadInput;
        }
    };
    let search =
        match Search::from_section(section.as_ref(), &args.slo, args.consumers_for, &source) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitStatus::BadInput;
            }
        };
    let name = args
        .scenario
        .file_stem()
        .map_or("capacity".into(), |s| s.to_string_lossy().to_string());
    let request = CapacityRequest {
        out_dir: args
            .out
            .unwrap_or_else(|| dbq_bench::run::default_out_dir(&format!("capacity-{name}"))),
        scenario: args.scenario,
        overrides,
        env: env_defaults(),
        search,
        status: !args.quiet,
    };
    let shutdown = CancellationToken::new();
    tokio::spawn(watch_signals(shutdown.clone()));
    match capacity::run(&request, &shutdown).await {
        Ok(c) => {
            if !args.quiet {
                out!("{}", capacity::markdown(&c));
                outln!("\nresults    {}", request.out_dir.display());
            }
            append_to_step_summary(capacity::markdown(&c).as_bytes());
            let found = match c.search.consumers_for_rate {
                Some(_) => c.min_consumers.is_some(),
                None => c.max_sustainable_per_s.is_some(),
            };
            if c.interrupted {
                return ExitStatus::Interrupted;
            }
            let status = match found {
                true => ExitStatus::Ok,
                false => ExitStatus::ThresholdFailed,
            };
            worst(status, args.baselines.apply(&request.out_dir))
        }
        Err(f) => {
            eprintln!("error: {f}");
            f.exit_status()
        }
    }
}

/// `compare`: judges the candidate against the baseline; 99 when something regressed.
fn compare_command(
    baseline: &std::path::Path,
    candidate: &std::path::Path,
    max_regression: &[String],
    quiet: bool,
) -> ExitStatus {
    use dbq_bench::compare;
    let allowance = match compare::Allowance::parse(max_regression) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitStatus::BadInput;
        }
    };
    let (base, cand) = match (compare::read(baseline), compare::read(candidate)) {
        (Ok(b), Ok(c)) => (b, c),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("error: compare: {e:#}");
            return ExitStatus::BadInput;
        }
    };
    let judgements = compare::judge(&base, &cand, &allowance);
    if judgements.is_empty() {
        eprintln!(
            "error: compare: {} and {} share no figures to compare (a run with a run, a matrix with the same matrix)",
            baseline.display(),
            candidate.display()
        );
        return ExitStatus::BadInput;
    }
    let md = compare::markdown(
        &judgements,
        &baseline.display().to_string(),
        &candidate.display().to_string(),
    );
    if !quiet {
        out!("{md}");
    }
    append_to_step_summary(md.as_bytes());
    let mut status = ExitStatus::Ok;
    for j in judgements.iter().filter(|j| j.regressed) {
        eprintln!(
            "regression: {}: {} {:.2} -> {:.2} ({:+.1}%): {}",
            j.scope,
            j.figure,
            j.baseline,
            j.candidate,
            j.change * 100.0,
            j.why
        );
        status = ExitStatus::ThresholdFailed;
    }
    status
}

/// `matrix`: runs the cells (or merges cells run elsewhere) and prints the comparison.
async fn matrix_command(args: MatrixArgs) -> ExitStatus {
    use dbq_bench::matrix::{self, MatrixRequest, comparison::Comparison};
    if let Some(MatrixCommand::Merge { dirs, out }) = args.merge {
        let out = out.unwrap_or_else(|| dirs[0].clone());
        let merged = Comparison::from_dirs(&dirs).and_then(|c| c.write(&out).map(|_| c));
        return match merged {
            Ok(c) => {
                if !args.quiet {
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
        };
    }
    let Some(scenario) = args.scenario else {
        eprintln!("error: matrix: a scenario file is required");
        return ExitStatus::BadInput;
    };
    if let Err(e) = args.baselines.check() {
        eprintln!("error: {e}");
        return ExitStatus::BadInput;
    }
    let mut extra_axes = Vec::new();
    for flag in &args.vary {
        match matrix::axis_from_flag(flag) {
            Ok(axis) => extra_axes.push(axis),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitStatus::BadInput;
            }
        }
    }
    let name = scenario
        .file_stem()
        .map_or("matrix".into(), |s| s.to_string_lossy().to_string());
    let request = MatrixRequest {
        overrides: args.overrides.overrides(),
        env: env_defaults(),
        extra_axes,
        repeat: args.repeat,
        out_dir: args
            .out
            .unwrap_or_else(|| dbq_bench::run::default_out_dir(&format!("matrix-{name}"))),
        only_cell: args.cell,
        status: !args.quiet,
        scenario,
    };
    let plan = match request.plan() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitStatus::BadInput;
        }
    };
    let shutdown = CancellationToken::new();
    tokio::spawn(watch_signals(shutdown.clone()));
    match matrix::run(&request, &plan, &shutdown).await {
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

/// The exit status that matters more when two apply (130, then 1, then 99, then 2, then 0).
fn worst(a: ExitStatus, b: ExitStatus) -> ExitStatus {
    let rank = |s: ExitStatus| match s {
        ExitStatus::Interrupted => 4,
        ExitStatus::RunFailed => 3,
        ExitStatus::ThresholdFailed => 2,
        ExitStatus::BadInput => 1,
        ExitStatus::Ok => 0,
    };
    if rank(b) > rank(a) { b } else { a }
}

/// 130 interrupted; 99 a threshold failed (or stopped the run early); 1 the run failed
/// (accounting, drain timeout); 0 otherwise.
fn exit_status(s: &Summary) -> ExitStatus {
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

/// In GitHub Actions (`GITHUB_STEP_SUMMARY` set), appends report.md to the job summary.
fn append_step_summary(dir: &std::path::Path) {
    if let Ok(md) = std::fs::read(dir.join("report.md")) {
        append_to_step_summary(&md);
    }
}

/// Appends Markdown to the GitHub Actions job summary, when there is one.
fn append_to_step_summary(md: &[u8]) {
    let Some(target) = std::env::var_os("GITHUB_STEP_SUMMARY") else {
        return;
    };
    let appended = {
        use std::io::Write;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&target)
            .and_then(|mut f| f.write_all(md))
    };
    if let Err(e) = appended {
        eprintln!("dbq-bench: warning: could not append to GITHUB_STEP_SUMMARY: {e}");
    }
}

/// `report DIR`: reads the saved data and writes every format again.
fn report_command(dir: &std::path::Path, quiet: bool) -> ExitStatus {
    let results = match RunResults::load(dir) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitStatus::BadInput;
        }
    };
    if let Err(e) = write_all(dir, &results) {
        eprintln!("error: {e:#}");
        return ExitStatus::RunFailed;
    }
    if !quiet {
        outln!("{}", terminal::render(&results.summary));
        outln!("results    {} (rendered again)", dir.display());
    }
    // The run's own outcome is in the files; rendering them again worked.
    ExitStatus::Ok
}

/// First Ctrl-C (or SIGTERM): stop the load, keep partial results, tear down. Second: leave
/// at once.
async fn watch_signals(shutdown: CancellationToken) {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    let next = async |term: &mut Option<tokio::signal::unix::Signal>| match term {
        Some(t) => tokio::select! { _ = tokio::signal::ctrl_c() => {}, _ = t.recv() => {} },
        None => {
            tokio::signal::ctrl_c().await.ok();
        }
    };
    next(&mut term).await;
    eprintln!(
        "\ndbq-bench: stopping: finishing in-flight jobs, writing partial results, tearing down (Ctrl-C again to quit at once)"
    );
    shutdown.cancel();
    next(&mut term).await;
    std::process::exit(ExitStatus::Interrupted as i32);
}
