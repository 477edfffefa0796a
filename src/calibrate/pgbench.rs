//! pgbench, PostgreSQL's own load tool, as calibrate runs it: found on the machine, given a
//! script in a file of its own, pointed at the queue's namespace, and read back (its
//! transaction count, its per-statement latencies, the CPU it used).
//!
//! Rules: pgbench's own output is the source of its figures; a pgbench that fails names its
//! first errors; nothing here knows which queue design the script runs.

use crate::backend::Backend;
use anyhow::{Context, Result, bail};
use nix::sys::resource::{UsageWho, getrusage};
use std::path::{Path, PathBuf};

/// What one pgbench process did.
pub struct Ran {
    /// Its report (stdout).
    pub report: String,
    /// CPU seconds (user + system) it used.
    pub cpu_s: f64,
}

/// Runs pgbench with `script` (written to `dir`) and `args` against `queue`'s namespace;
/// its report, and the CPU it used.
pub async fn run(
    pgbench: &Path,
    queue: &dyn Backend,
    (dir, name, script): (&Path, &str, &str),
    args: &[String],
) -> Result<Ran> {
    let file = dir.join(name);
    std::fs::write(&file, script).with_context(|| format!("writing {}", file.display()))?;
    let mut cmd = tokio::process::Command::new(pgbench);
    cmd.args(["-n", "-M", "prepared", "-f"])
        .arg(&file)
        .args(args)
        .envs(queue.client_env());
    let before = cpu_seconds();
    let out = cmd.output().await.with_context(|| {
        format!(
            "running {} (install PostgreSQL's client tools, or point --pgbench at it)",
            pgbench.display()
        )
    })?;
    let cpu_s = cpu_seconds() - before;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let errors: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("error") || l.contains("FATAL"))
            .take(3)
            .collect();
        bail!("pgbench ({name}) failed: {}", errors.join("; "));
    }
    Ok(Ran {
        report: String::from_utf8_lossy(&out.stdout).into_owned(),
        cpu_s,
    })
}

/// CPU seconds (user + system) the harness's finished children used so far.
fn cpu_seconds() -> f64 {
    getrusage(UsageWho::RUSAGE_CHILDREN).map_or(0.0, |u| {
        let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 / 1e6;
        t(u.user_time()) + t(u.system_time())
    })
}

/// Threads for `clients` clients: one per core at most.
pub fn threads(clients: u32) -> u32 {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    clients.clamp(1, cores)
}

/// "number of transactions actually processed: N" from pgbench's report.
pub fn transactions(report: &str) -> Result<u64> {
    report
        .lines()
        .find_map(|l| l.strip_prefix("number of transactions actually processed: "))
        .and_then(|v| v.split(['/', ' ']).next())
        .and_then(|v| v.trim().parse().ok())
        .context("no 'number of transactions actually processed' line")
}

/// The mean latency (ms) pgbench's `-r` report gives the first statement that starts with
/// `starts_with` (its first line, as pgbench prints it).
pub fn statement_latency_ms(report: &str, starts_with: &str) -> Option<f64> {
    report
        .lines()
        .skip_while(|l| !l.starts_with("statement latencies"))
        .skip(1)
        .find_map(|l| {
            let mut parts = l.split_whitespace();
            let ms: f64 = parts.next()?.parse().ok()?;
            // PostgreSQL 15's pgbench prints a failures column; older ones do not.
            let rest: Vec<&str> = parts.collect();
            let text = match rest.first() {
                Some(f) if f.parse::<u64>().is_ok() => rest[1..].join(" "),
                _ => rest.join(" "),
            };
            text.starts_with(starts_with).then_some(ms)
        })
}

/// Where pgbench is: on PATH, or beside the local server binaries.
pub fn find() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("pgbench"))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| {
        let root = Path::new("/usr/lib/postgresql");
        let mut versions: Vec<PathBuf> = std::fs::read_dir(root)
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path().join("bin/pgbench")))
            .filter(|p| p.is_file())
            .collect();
        versions.sort();
        versions.pop()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgbench_reports_are_read() {
        let report = "transaction type: claim-complete.sql\nnumber of clients: 4\nnumber of transactions actually processed: 61234\nnumber of failed transactions: 0 (0.000%)\ntps = 4082.2 (without initial connection time)\n";
        assert_eq!(transactions(report).unwrap(), 61234);
        assert!(transactions("nothing").is_err());
    }

    #[test]
    fn a_statement_s_latency_is_read_from_the_per_statement_report() {
        let report = "tps = 600.1 (without initial connection time)\n\
            statement latencies in milliseconds and failures:\n\
            \x20        0.001           0  \\set id 0\n\
            \x20        0.052           0  BEGIN;\n\
            \x20        0.412           0  WITH next_job AS (\n\
            \x20        1.100           0  \\sleep 1000 us\n";
        assert_eq!(statement_latency_ms(report, "WITH next_job"), Some(0.412));
        assert_eq!(statement_latency_ms(report, "BEGIN"), Some(0.052));
        assert_eq!(statement_latency_ms(report, "UPDATE"), None);
        let old = "statement latencies in milliseconds:\n         0.300  WITH next_job AS (\n";
        assert_eq!(statement_latency_ms(old, "WITH next_job"), Some(0.3));
    }
}
