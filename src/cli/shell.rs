//! What every command shares with the process around it: a runtime, Ctrl-C, one-line
//! errors for flags and panics, stdout that may close early, exit codes, and GitHub's job
//! summary.

use dbq_bench::error::ExitStatus;
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

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
pub(crate) use {out, outln};

/// Runs a command on a new runtime. A panic (a bug) ends it with one line and exit 1, after
/// dropping the namespaces it created on servers it does not own; servers it started stop as
/// their handles drop.
pub fn on_runtime(command: impl Future<Output = ExitStatus> + Send + 'static) -> ExitStatus {
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
                let _ = dbq_bench::backend::drop_open_namespaces().await;
                ExitStatus::RunFailed
            }
        }
    })
}

/// A token that the first Ctrl-C (or SIGTERM) cancels: stop the load, keep partial results,
/// tear down. The second quits without the results: it removes what the run started (its
/// server, or its namespace on a server it did not start) within a few seconds and names
/// what it could not remove; a third quits at once, naming what is left.
pub fn interruptible() -> CancellationToken {
    let shutdown = CancellationToken::new();
    tokio::spawn(watch_signals(shutdown.clone()));
    shutdown
}

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
    eprintln!(
        "dbq-bench: quitting now, without the results: removing what the run started (a few seconds; Ctrl-C again to leave it)"
    );
    let left = tokio::select! {
        left = remove_what_the_run_started() => left,
        _ = next(&mut term) => dbq_bench::leftovers::describe(),
    };
    for what in &left {
        eprintln!("dbq-bench: left behind: {what}");
    }
    std::process::exit(ExitStatus::Interrupted as i32);
}

/// The server the run started (its namespaces go with it), or else the namespaces it made on
/// a server it did not start; a library's worker processes either way. What could not be
/// removed, one line each.
async fn remove_what_the_run_started() -> Vec<String> {
    use dbq_bench::{backend, leftovers};
    let server = leftovers::started_a_server();
    let mut left = leftovers::remove_all(std::time::Duration::from_secs(5)).await;
    if !server {
        left.extend(backend::drop_open_namespaces().await);
    }
    left
}

/// A panic is a bug: one line that says so and where, instead of a backtrace hint.
pub fn report_panics_in_one_line() {
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

/// Help and version as clap prints them; a mistake in the flags as one line (the allowed
/// values included) and exit 2, like every other bad input.
pub fn flag_error(e: clap::Error) -> ExitCode {
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

/// Writes to stdout; a reader that went away (`| head`) is not an error.
pub fn print_out(bytes: &[u8]) -> ExitStatus {
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

/// The exit status that matters more when two apply (130, then 1, then 99, then 2, then 0).
pub fn worst(a: ExitStatus, b: ExitStatus) -> ExitStatus {
    let rank = |s: ExitStatus| match s {
        ExitStatus::Interrupted => 4,
        ExitStatus::RunFailed => 3,
        ExitStatus::ThresholdFailed => 2,
        ExitStatus::BadInput => 1,
        ExitStatus::Ok => 0,
    };
    if rank(b) > rank(a) { b } else { a }
}

/// Appends Markdown to the GitHub Actions job summary, when there is one
/// (`GITHUB_STEP_SUMMARY` set).
pub fn append_to_step_summary(md: &[u8]) {
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
        eprintln!(
            "dbq-bench: warning: could not append to GITHUB_STEP_SUMMARY ({}): {e}",
            std::path::Path::new(&target).display()
        );
    }
}

/// A results directory given with `--out` must be one that can be written: refused before
/// anything starts, rather than after a run whose results then have nowhere to go.
pub fn check_out(out: Option<&std::path::Path>) -> Result<FreshOut, String> {
    let Some(dir) = out else {
        return Ok(FreshOut(None));
    };
    if dir.exists() && !dir.is_dir() {
        return Err(format!(
            "--out {}: is a file, not a directory (give a directory; it is created when missing)",
            dir.display()
        ));
    }
    let created = !dir.exists();
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("--out {}: cannot create it: {e}", dir.display()))?;
    let probe = dir.join(".dbq-bench-write-check");
    std::fs::write(&probe, b"")
        .map_err(|e| format!("--out {}: cannot write in it: {e}", dir.display()))?;
    std::fs::remove_file(&probe).ok();
    Ok(FreshOut(created.then(|| dir.to_path_buf())))
}

/// An `--out` directory this command created: removed again if the command fails before
/// writing anything in it (a server that could not be provisioned leaves no empty folder).
pub struct FreshOut(Option<std::path::PathBuf>);

impl FreshOut {
    pub fn discard_if_empty(&self) {
        if let Some(dir) = &self.0 {
            // Fails, as it should, when something was written there.
            let _ = std::fs::remove_dir(dir);
        }
    }
}
