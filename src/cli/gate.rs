//! `dbq-bench gate BASE CAND`: a team's pull request against its base, measured in pairs on
//! one server by this one binary, and judged; the exit status is the CI job's.

use super::shell::{append_to_step_summary, check_out, interruptible, out, worst};
use super::{GateArgs, OverrideArgs};
use clap::Args;
use dbq_bench::error::{ExitStatus, Failure};
use dbq_bench::gate::{self, GateRequest, GateVerdict};
use dbq_bench::scenario::EnvDefaults;
use dbq_bench::status;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args)]
pub struct GateCommandArgs {
    /// The base's checkout of your repository (the branch the pull request goes into).
    base: PathBuf,
    /// The candidate's checkout of your repository (the pull request).
    cand: PathBuf,
    /// A scenario to gate on, its path relative to both checkouts (e.g.
    /// bench/queue-gate.toml); each side runs its own copy, and through its `queue.dir` its
    /// own design directory or library worker. Repeat for more: the false-alarm rate is the
    /// whole gate's, shared over every figure of every scenario.
    #[arg(long = "scenario", value_name = "FILE", required = true)]
    scenarios: Vec<PathBuf>,
    /// Pairs of runs per scenario, base and candidate side by side, the order alternating
    /// (A B, B A, …) so that drift of the machine cancels [2 to 50].
    #[arg(long, value_name = "N", default_value_t = 5,
          value_parser = clap::value_parser!(u32).range(*gate::PAIRS.start() as i64..=*gate::PAIRS.end() as i64))]
    pairs: u32,
    /// A scenario change for the base only, after the --sets of both (KEY=VALUE).
    #[arg(long = "base-set", value_name = "KEY=VALUE")]
    base_sets: Vec<String>,
    /// A scenario change for the candidate only (KEY=VALUE); e.g. to try the gate on a
    /// known slowdown.
    #[arg(long = "cand-set", value_name = "KEY=VALUE")]
    cand_sets: Vec<String>,
    /// A shell command run in each checkout before anything is measured, e.g. installing
    /// that side's pinned library into a virtual environment of its own
    /// (`python3 -m venv .venv && .venv/bin/pip install -r queue/requirements.txt`);
    /// DBQ_GATE_SIDE says which side (base or cand); its output goes to OUT/prepare-<side>.log.
    #[arg(long, value_name = "COMMAND")]
    prepare: Option<String>,
    /// Where the runs (OUT/<scenario name>/{base,cand}/r<k>, replaced on every gate) and
    /// the verdict (OUT/gate.{md,json}) go.
    #[arg(long, value_name = "DIR", default_value = "results/gate")]
    out: PathBuf,
    /// No progress lines and no table on the terminal (the regressions are still printed).
    #[arg(long, short)]
    quiet: bool,
    #[command(flatten)]
    gate: GateArgs,
    #[command(flatten)]
    overrides: OverrideArgs,
}

/// Measures and judges; 99 when the candidate regressed, 0 when not, 2 on bad input
/// (decided before anything is measured), 1 when a side could not be measured, 130 when
/// interrupted.
pub async fn command(args: GateCommandArgs) -> ExitStatus {
    let started = Instant::now();
    let rules = match args.gate.rules() {
        Ok(r) => r,
        Err(e) => return bad(&e),
    };
    let request = GateRequest {
        base: args.base.clone(),
        cand: args.cand.clone(),
        scenarios: args.scenarios.clone(),
        pairs: args.pairs,
        overrides: args.overrides.overrides(),
        base_sets: args.base_sets.clone(),
        cand_sets: args.cand_sets.clone(),
        prepare: args.prepare.clone(),
        out_dir: args.out.clone(),
        env: EnvDefaults::from_env(),
        status: status::for_command(args.quiet),
    };
    let plan = match request.plan(&rules.allowed) {
        Ok(p) => p,
        Err(e) => return bad(&e.to_string()),
    };
    if let Err(e) = check_out(Some(&args.out)) {
        return bad(&e);
    }
    for half in &plan.halves {
        let changed = match half.changes.is_empty() {
            true => "nothing in the scenario or the design's files".to_string(),
            false => half.changes.join("; "),
        };
        request.status.line(&format!(
            "{} ({}): changed: {changed}",
            half.file.display(),
            half.name
        ));
    }
    let measured = match gate::measure(&request, &plan, &interruptible()).await {
        Ok(m) => m,
        Err(f) => return failed(&f),
    };
    if measured.interrupted {
        eprintln!(
            "dbq-bench: gate interrupted after {} pair(s), not judged; the runs so far are in {}",
            measured.pairs_done,
            args.out.display()
        );
        return ExitStatus::Interrupted;
    }
    let verdict = match gate::judge(&request, &plan, &measured, &rules) {
        Ok(v) => v,
        Err(f) => return failed(&f),
    };
    let status = say(&verdict, &args, &rules, started);
    match measured.interrupted {
        true => ExitStatus::Interrupted,
        false => worst(
            status,
            super::compare::export(&verdict.candidate, &args.gate),
        ),
    }
}

fn bad(e: &str) -> ExitStatus {
    eprintln!("error: gate: {e}");
    ExitStatus::BadInput
}

fn failed(f: &Failure) -> ExitStatus {
    eprintln!("error: gate: {f}");
    f.exit_status()
}

/// Prints and saves the verdict; its exit status.
fn say(
    v: &GateVerdict,
    args: &GateCommandArgs,
    rules: &dbq_bench::compare::GateRules,
    started: Instant,
) -> ExitStatus {
    let md = gate::markdown(v);
    if !args.quiet {
        out!("{md}");
    }
    append_to_step_summary(md.as_bytes());
    let json = serde_json::to_string_pretty(v).unwrap_or_default() + "\n";
    for (file, text) in [("gate.md", md.as_str()), ("gate.json", json.as_str())] {
        if let Err(e) = std::fs::write(args.out.join(file), text) {
            eprintln!("error: writing {}: {e}", args.out.join(file).display());
        }
    }
    for u in &v.unfinished {
        eprintln!("regression: {u}");
    }
    for j in v.outcome.regressions() {
        eprintln!("regression: {}: {}: {}", j.scope, j.figure, j.why);
    }
    for j in v.outcome.inconclusive() {
        let fails = if rules.fail_inconclusive {
            " (fails: --inconclusive fail)"
        } else {
            ""
        };
        eprintln!("inconclusive{fails}: {}: {}: {}", j.scope, j.figure, j.why);
    }
    let took = started.elapsed().as_secs();
    let fails = v.fails(rules);
    eprintln!(
        "dbq-bench: gate: {} ({} pair(s) of {} scenario(s), {took} s; {})",
        match fails {
            true => "REGRESSED",
            false if v.verdict == "inconclusive" => "no regression shown, inconclusive",
            false => "no regression",
        },
        v.pairs,
        v.scenarios.len(),
        args.out.join("gate.md").display()
    );
    match fails {
        true => ExitStatus::ThresholdFailed,
        false => ExitStatus::Ok,
    }
}
