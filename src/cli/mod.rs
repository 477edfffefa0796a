//! The `dbq-bench` command line: the flags of every command, and which module carries each
//! one out. The work itself is the library's; these modules turn flags into requests, print
//! what comes back and choose the exit code.

mod calibrate;
mod capacity;
mod compare;
mod files;
mod gate;
mod matrix;
mod prove;
mod run;
pub mod shell;

use clap::{Args, Parser, Subcommand};
use dbq_bench::error::ExitStatus;
use dbq_bench::scenario::{Overrides, ProviderKind};
use std::path::PathBuf;

/// The top-level help's description, its engines read from the registry.
fn long_about() -> String {
    use dbq_bench::backend::Engine;
    let engines: Vec<String> = Engine::ALL
        .iter()
        .map(|e| format!("{} ({})", e.as_str(), e.label()))
        .collect();
    format!(
        "Load-test and benchmark a job queue: inside a database (SELECT … FOR UPDATE SKIP LOCKED), or on a broker.\n\n\
         A scenario file describes the server (database.engine: {}), the queue design, producer and consumer fleets and a list of phases. \
         `run` provisions the server, drives open-loop load through the phases, drains the queue, proves that every committed job finished, and writes results.",
        engines.join(", ")
    )
}

const EXIT_CODES: &str = "Exit codes: 0 ok; 1 the run failed (database error, lost or duplicated jobs, drain timed out); \
2 bad input (scenario, flag, URL or results directory); 99 a threshold failed; 130 interrupted (partial results written).";

/// Load-test and benchmark a job queue: inside a database (SELECT … FOR UPDATE SKIP LOCKED),
/// or on a broker.
#[derive(Parser)]
#[command(name = "dbq-bench", version, after_help = EXIT_CODES, long_about = long_about())]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario and write results to a directory.
    Run(run::RunArgs),
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
    /// Prove a run whose harness died (SIGKILL, a client library's crash): replay the journal
    /// it left in its results directory and check every job it saw committed against the
    /// queue, still on its server. Writes proof.json; exit 0 when nothing was lost or
    /// duplicated (jobs may still be queued), 1 otherwise.
    Prove {
        /// The results directory of the run (it holds journal.jsonl).
        dir: PathBuf,
        /// The run's server, when the journal cannot name it in full (a saved URL's password
        /// is masked).
        #[arg(long, value_name = "URL", env = "DATABASE_URL", hide_env_values = true)]
        database_url: Option<String>,
        /// Drop the run's queue (its schema, keys or topics) once proved.
        #[arg(long = "drop")]
        drop_queue: bool,
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
    Matrix(matrix::MatrixArgs),
    /// Find the highest offered rate the queue sustains while an objective holds: steps of
    /// doubling rates until one breaks it, then bisection to ±10%.
    ///
    /// Writes DIR/steps/<k>-<rate>-per-s/ (every step's results) and DIR/capacity.{json,md,html}.
    Capacity(capacity::CapacityArgs),
    /// Is this load machine fast enough? Runs pgbench and dbq-bench on the same server, the
    /// same prefilled seed table and the same claim + complete transaction (0 ms handler)
    /// at each connection count, and prints their jobs/s and CPU per job side by side; and
    /// the harness alone on an in-memory queue, its own ceiling.
    ///
    /// Writes DIR/calibrate.{json,md,html} and each harness run's results in
    /// DIR/harness-<connections>-<run>/.
    Calibrate(calibrate::CalibrateArgs),
    /// Regression gate: compare two results measured the same way (runs, repeated runs or
    /// matrices) and exit 99 when a figure got worse beyond its allowance and beyond the noise.
    ///
    /// Gated figures: jobs/s (while busy and over the window), e2e p50/p99, claim p50, lost
    /// jobs (any lost job is a regression). Each is judged three ways: regressed (worse than
    /// its allowance, and unlikely to be noise at the stated false-alarm rate), no regression
    /// (shown to be within its allowance), or inconclusive (too few or too noisy runs: the
    /// table says how many would decide). Single runs have no spread, so they are never
    /// called regressed. Two directories of run directories with the same names (r1 … r5),
    /// measured side by side in pairs, are compared pair by pair, so that drift of the
    /// machine cancels: the recipe in docs/ci.md.
    Compare {
        /// Results directory of the baseline: a run's, a repeated run's, a matrix's, a
        /// capacity search's, or a directory of run directories.
        baseline: PathBuf,
        /// Results directory of the candidate, measured the same way.
        candidate: PathBuf,
        #[command(flatten)]
        gate: GateArgs,
        /// Print only the regressions.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Gate your queue in CI: measure your pull request against its base side by side, in
    /// pairs on one server, and exit 99 when the queue got slower.
    ///
    /// BASE and CAND are two checkouts of your repository; each runs its own copy of every
    /// --scenario (and through its queue.dir its own design directory, or library worker),
    /// while this one binary measures both: a change of the tool can never pass for a change
    /// of the queue. What differs by accident (another scenario name, design, engine or
    /// server) is refused before anything is measured; a change of the design's files, the
    /// scenario file or the library's version is the change judged, and named. Writes
    /// OUT/<scenario name>/{base,cand}/r<k>/ (every run) and OUT/gate.{md,json}. See
    /// docs/ci.md.
    Gate(gate::GateCommandArgs),
    /// Print a shell completion script, e.g. `dbq-bench completions bash > ~/.local/share/bash-completion/completions/dbq-bench`.
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
    /// Print the JSON Schema of scenario files, for editors that validate and complete TOML
    /// (e.g. Taplo / Even Better TOML: `#:schema ./dbq-bench.schema.json` atop a scenario).
    Schema,
}

/// Carries out the command; its exit status.
pub fn dispatch(cli: Cli) -> ExitStatus {
    use shell::on_runtime;
    match cli.command {
        Command::Run(args) => on_runtime(run::command(args)),
        Command::Worker => files::worker(),
        Command::Report { dir, quiet } => files::report(&dir, quiet),
        Command::Validate {
            scenarios,
            overrides,
        } => files::validate(&scenarios, &overrides.overrides()),
        Command::Prove {
            dir,
            database_url,
            drop_queue,
        } => on_runtime(async move { prove::command(&dir, database_url, drop_queue).await }),
        Command::Matrix(args) => on_runtime(matrix::command(args)),
        Command::Capacity(args) => on_runtime(capacity::command(args)),
        Command::Calibrate(args) => on_runtime(calibrate::command(args)),
        Command::Compare {
            baseline,
            candidate,
            gate,
            quiet,
        } => compare::command(&baseline, &candidate, &gate, quiet),
        Command::Gate(args) => on_runtime(gate::command(args)),
        Command::Completions { shell } => files::completions::<Cli>(shell),
        Command::Schema => files::schema(),
    }
}

/// The flags that change a scenario before it is validated.
#[derive(Args)]
pub struct OverrideArgs {
    /// Where the server comes from [default: the scenario's database.provider, else auto].
    #[arg(long, value_enum, value_name = "PROVIDER")]
    db: Option<ProviderKind>,
    /// Server for the url provider. Beats database.url; DATABASE_URL is used when neither is set.
    #[arg(long, value_name = "URL")]
    database_url: Option<String>,
    /// Image for the container provider. Beats database.image; the engine's variable
    /// (DBQ_POSTGRES_IMAGE, DBQ_MARIADB_IMAGE, DBQ_RABBITMQ_IMAGE or DBQ_REDIS_IMAGE) is used
    /// when neither is set; the default is the engine's official image.
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

/// How the regression gate judges (`compare`, and `--baseline` on the studies).
#[derive(Args, Clone, Default)]
pub struct GateArgs {
    /// How much worse a figure may get: `10%` (every figure; the default) or
    /// `e2e_p99_ms=25%` (one figure; an ungated figure named here is gated). Repeatable.
    #[arg(long = "max-regression", value_name = "[FIGURE=]PCT")]
    max_regression: Vec<String>,
    /// The chance the gate calls two measurements of the same setting a regression, shared
    /// over every figure it judges [default: 5%].
    #[arg(long, value_name = "PCT")]
    false_alarm_rate: Option<String>,
    /// What an inconclusive figure (too few or too noisy runs to tell) does: `pass` warns and
    /// exits 0, `fail` exits 99.
    #[arg(long, value_enum, value_name = "WHAT", default_value = "pass")]
    inconclusive: Inconclusive,
    /// Judge results that differ in KEY anyway, each difference printed as a warning; refused
    /// otherwise (exit 2). KEY: scenario (another scenario's name), design (another design or
    /// engine), server (another release, e.g. PostgreSQL 15 against 17), unfinished (a run
    /// that did not end as planned). Comma-separated or repeated. A custom design's changed
    /// files and a library's changed version are never refused: they are the change judged.
    #[arg(long = "allow-different", value_name = "KEY[,KEY]")]
    allow_different: Vec<String>,
    /// Also write the candidate's figures in Bencher Metric Format (JSON, each figure with
    /// the lowest and highest of its runs as bounds), for continuous-benchmarking tools.
    #[arg(long, value_name = "FILE")]
    export_bmf: Option<PathBuf>,
    /// Also write the candidate's figures for github-action-benchmark
    /// (`tool: customSmallerIsBetter`): latencies in ms, throughput as µs per job.
    #[arg(long, value_name = "FILE")]
    export_github_benchmark: Option<PathBuf>,
}

#[derive(Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
enum Inconclusive {
    #[default]
    Pass,
    Fail,
}

impl GateArgs {
    fn rules(&self) -> Result<dbq_bench::compare::GateRules, String> {
        dbq_bench::compare::GateRules::parse(
            &self.max_regression,
            self.false_alarm_rate.as_deref(),
            self.inconclusive == Inconclusive::Fail,
        )?
        .allowing(&self.allow_different)
    }
}

/// Saving results as a named baseline, and gating them against one.
#[derive(Args)]
pub struct BaselineArgs {
    /// Keep these results as baseline NAME (in results/baselines/NAME), to compare later
    /// runs with --baseline NAME.
    #[arg(long, value_name = "NAME")]
    save_baseline: Option<String>,
    /// Compare these results with the saved baseline NAME (as `dbq-bench compare` does) and
    /// exit 99 when something regressed.
    #[arg(long, value_name = "NAME")]
    baseline: Option<String>,
    #[command(flatten)]
    gate: GateArgs,
}

impl BaselineArgs {
    /// Checks the names and the gate's rules before anything runs.
    fn check(&self) -> Result<(), String> {
        for name in self.save_baseline.iter().chain(self.baseline.iter()) {
            dbq_bench::compare::baseline_dir(name)?;
        }
        let gating = self.gate.max_regression.len()
            + usize::from(self.gate.false_alarm_rate.is_some())
            + usize::from(self.gate.inconclusive == Inconclusive::Fail)
            + self.gate.allow_different.len();
        if gating > 0 && self.baseline.is_none() {
            return Err(
                "--max-regression, --false-alarm-rate, --inconclusive and --allow-different judge against a baseline: add --baseline NAME".into(),
            );
        }
        self.gate.rules().map(|_| ())
    }

    /// Saves and/or gates the results in `dir`; the exit status the gate asks for.
    fn apply(&self, dir: &std::path::Path) -> ExitStatus {
        let mut status = ExitStatus::Ok;
        if self.baseline.is_none() {
            status = compare::export_dir(dir, &self.gate);
        }
        if let Some(name) = &self.baseline {
            status = match dbq_bench::compare::baseline_dir(name) {
                Ok(base) if base.exists() => compare::command(&base, dir, &self.gate, false),
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
