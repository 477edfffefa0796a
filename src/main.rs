//! The `dbq-bench` command line: parses the flags and hands the command to its module in
//! `cli`; every outcome becomes an exit code.

mod cli;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let parsed = match cli::Cli::try_parse() {
        Ok(parsed) => parsed,
        Err(e) => return cli::shell::flag_error(e),
    };
    cli::shell::report_panics_in_one_line();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                // lapin logs every broken connection as an error; the harness reports
                // those in its own words (and counts them), so its log is off by default.
                .unwrap_or_else(|_| "error,lapin=off".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    ExitCode::from(cli::dispatch(parsed) as u8)
}
