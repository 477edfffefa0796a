//! `dbq-bench capacity`: searches the offered rate (or the consumers) and prints the answer.

use super::shell::{append_to_step_summary, check_out, interruptible, out, outln, worst};
use super::{BaselineArgs, OverrideArgs};
use clap::Args;
use dbq_bench::capacity::{self, CapacityRequest, Search};
use dbq_bench::error::ExitStatus;
use dbq_bench::report::artifact::Document;
use dbq_bench::scenario::{
    Confirm, EnvDefaults, FirstVacuum, HumanDuration, PlanChange, load_plan,
};
use dbq_bench::status;
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(Args)]
pub struct CapacityArgs {
    /// Scenario file (TOML); its [capacity] table tunes the search, its phases are replaced
    /// by each step's warm-up and measured window.
    scenario: PathBuf,
    /// A condition of the objective on each step's measured window, as a threshold:
    /// --slo 'end_to_end.p99=<250ms' (quoted: < is a shell redirect). Repeatable; adds to (or replaces the same metric of)
    /// the scenario's capacity.slo.
    #[arg(long = "slo", value_name = "METRIC=COND")]
    slo: Vec<String>,
    /// Search the consumer count instead of the rate: the fewest consumers that meet the
    /// objective at RATE jobs/s, starting where Little's law puts it (1.25 × RATE × the
    /// handler's mean time), halved while it holds or doubled until it does (up to
    /// capacity.max_consumers), then bisected. A step whose backlog does not drain is
    /// followed by the next on a fresh queue. The count found is then confirmed at RATE with
    /// the standard upset on capacity.stable_runs fresh queues, as --at would (unless
    /// --confirm off): how many workers, and whether they carry it, in one command.
    #[arg(long, value_name = "RATE")]
    consumers_for: Option<f64>,
    /// How long the rate found must then hold on a fresh queue: auto (the larger of 3 min
    /// and 3 × the server's autovacuum_naptime), a duration such as 10m, or off; overrides
    /// capacity.confirm. Where that is longer than one naptime, shorter screens of a fresh
    /// table's first naptime find the rate first (× 1.25 up from the search's figure while
    /// they hold, or × 0.6 down until one holds, then bisected to within 15%); a whole
    /// confirmation that does not hold is tried again at 0.85 × (all tries together up to
    /// capacity.confirm_tries). A window broken while the load machine stalled is measured
    /// again, at most twice, and not held against the rate. Each whole confirmation carries
    /// the standard upset after its first window (capacity.upset: by default every worker
    /// takes no job for 1 s, and the backlog must be back within 30 s); the stable capacity
    /// is the highest rate that holds and recovers on capacity.stable_runs (2) fresh
    /// queues, and the rates above it that held only until an upset came are the vulnerable
    /// band.
    #[arg(long, value_name = "auto|off|DURATION", conflicts_with = "quick")]
    confirm: Option<Confirm>,
    /// When the confirmation's fresh table gets its first vacuum: late (default on
    /// PostgreSQL: autovacuum kept off it for one autovacuum_naptime, then one VACUUM paced as
    /// autovacuum's, so the answer holds however late the first vacuum comes) or whenever
    /// (the server's autovacuum as it comes; the only choice on MariaDB). Overrides
    /// capacity.first_vacuum.
    #[arg(long, value_name = "WHEN", conflicts_with = "quick")]
    first_vacuum: Option<FirstVacuum>,
    /// The search's answer alone, without the confirmation (as --confirm off): a capacity
    /// between vacuums, labelled unconfirmed.
    #[arg(long)]
    quick: bool,
    /// "Will this rate hold?": no search; a whole confirmation at RATE jobs/s on each of
    /// --runs fresh queues (as long as --confirm says, the first vacuum as --first-vacuum
    /// says). Exit 0 only when it held on every one; the answer says on how many it held.
    #[arg(long, value_name = "RATE", conflicts_with_all = ["quick", "consumers_for"])]
    at: Option<f64>,
    /// With --at: how many fresh queues the rate is tried on.
    #[arg(long, value_name = "K", default_value_t = 3, requires = "at", value_parser = clap::value_parser!(u32).range(1..=20))]
    runs: u32,
    /// After the confirmation, hold the xmin horizon (an idle transaction with an XID) this
    /// long at the confirmed rate, judged as the confirmation is, then measure the time the
    /// queue takes to recover; overrides capacity.hold_horizon.
    #[arg(long, value_name = "DURATION", conflicts_with = "quick", value_parser = humantime::parse_duration)]
    hold_horizon: Option<std::time::Duration>,
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

/// The request, checked before anything starts: the scenario is read once, its
/// `[capacity]` table and the flags make the search.
fn request(args: &CapacityArgs) -> Result<CapacityRequest, String> {
    args.baselines.check()?;
    let plan = load_plan(
        &args.scenario,
        &args.overrides.overrides(),
        &EnvDefaults::from_env(),
    )
    .map_err(|e| e.to_string())?;
    // The queue's cost to the rest of the database is part of every capacity answer; the
    // completion audit, which adds work to the queue's own transactions, is not (the proof
    // still runs from the ledger and the table).
    let plan = plan
        .changed([PlanChange::BystanderUnlessSet, PlanChange::AuditOnlyIfAsked])
        .map_err(|e| e.to_string())?;
    let mut search = Search::from_section(
        plan.resolved.capacity.as_ref(),
        &args.slo,
        args.consumers_for,
        args.quick,
        &plan.source,
    )
    .map_err(|e| e.to_string())?;
    if let Some(confirm) = args.confirm {
        search
            .set_confirm(confirm)
            .map_err(|reason| format!("--confirm {confirm}: {reason}"))?;
    }
    if let Some(rate) = args.at {
        search
            .set_at(rate, args.runs)
            .map_err(|reason| format!("--at {rate}: {reason}"))?;
    }
    if let Some(hold) = args.hold_horizon {
        search
            .set_hold_horizon(hold)
            .map_err(|reason| format!("--hold-horizon {}: {reason}", HumanDuration(hold)))?;
    }
    search
        .resolve_first_vacuum(plan.database.engine, args.first_vacuum)
        .map_err(|reason| match args.first_vacuum {
            Some(v) => format!("--first-vacuum {v}: {reason}"),
            None => format!("{}: capacity.first_vacuum: {reason}", plan.source),
        })?;
    check_out(args.out.as_deref())?;
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| dbq_bench::run::default_out_dir(&format!("capacity-{}", plan.name)));
    Ok(CapacityRequest {
        plan,
        search,
        out_dir,
        status: status::for_command(args.quiet),
        progress_bar: !args.quiet && std::io::stderr().is_terminal(),
    })
}

pub async fn command(args: CapacityArgs) -> ExitStatus {
    let request = match request(&args) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitStatus::BadInput;
        }
    };
    match capacity::run(&request, &interruptible()).await {
        Ok(c) => {
            if !args.quiet {
                out!("{}", c.markdown());
                outln!("\nresults    {}", request.out_dir.display());
            }
            append_to_step_summary(c.markdown().as_bytes());
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
