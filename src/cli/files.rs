//! The commands that need no server: `report` (render a results directory again),
//! `validate`, `completions`, `schema`, and the hidden `worker` a run starts.

use super::shell::{outln, print_out};
use dbq_bench::error::ExitStatus;
use dbq_bench::report::{RunResults, terminal, write_all};
use dbq_bench::scenario::{EnvDefaults, Overrides, load_plan};
use std::path::{Path, PathBuf};

/// `report DIR`: reads the saved data and writes every format again.
pub fn report(dir: &Path, quiet: bool) -> ExitStatus {
    if !dir.join("summary.json").is_file() {
        return report_study(dir, quiet);
    }
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

/// `report DIR` on a capacity search's or a matrix's (or repeated run's) results.
fn report_study(dir: &Path, quiet: bool) -> ExitStatus {
    let rendered = if dir.join("capacity.json").is_file() {
        dbq_bench::capacity::render_again(dir)
    } else if dir.join("comparison.json").is_file() {
        dbq_bench::matrix::comparison::Comparison::from_dirs(&[dir.to_path_buf()])
            .and_then(|c| c.write(dir).map(|()| format!("{} cell(s)", c.cells.len())))
    } else {
        eprintln!(
            "error: report {}: holds no summary.json (a run), capacity.json (a capacity search) or comparison.json (a matrix or repeated run)",
            dir.display()
        );
        return ExitStatus::BadInput;
    };
    match rendered {
        Ok(what) => {
            if !quiet {
                outln!("{what}");
                outln!("results    {} (rendered again)", dir.display());
            }
            ExitStatus::Ok
        }
        Err(e) => {
            eprintln!("error: report {}: {e:#}", dir.display());
            ExitStatus::BadInput
        }
    }
}

/// `validate FILE…`: one line per file.
pub fn validate(files: &[PathBuf], overrides: &Overrides) -> ExitStatus {
    let env = EnvDefaults::from_env();
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

/// `completions SHELL`.
pub fn completions<C: clap::CommandFactory>(shell: clap_complete::Shell) -> ExitStatus {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut C::command(), "dbq-bench", &mut script);
    print_out(&script)
}

/// `schema`: the JSON Schema of scenario files.
pub fn schema() -> ExitStatus {
    let schema = schemars::schema_for!(dbq_bench::scenario::Scenario);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    print_out(text.as_bytes())
}

/// The hidden `worker`: one consumer in a process of its own, started by `run`. The runtime
/// is never dropped: that would wait for the blocking read of stdin, which only ends when
/// the runner closes it. The process exits instead.
pub fn worker() -> ExitStatus {
    let runtime = tokio::runtime::Runtime::new();
    let result = match &runtime {
        Ok(rt) => rt.block_on(dbq_bench::fleet::process::worker_main()),
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
