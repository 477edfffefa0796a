//! The gate's second stage: each checkout prepared (`--prepare`), one server for both sides,
//! and the pairs — run k of every scenario on both sides, their order alternating (A B, B A,
//! …) so that neither side always goes first and drift longer than a pair cancels. Every
//! run is an ordinary results directory, `OUT/<scenario>/<side>/r<k>`, written as it ends;
//! Ctrl-C stops at once, keeps what finished and removes what the gate started.

use super::plan::{GatePlan, GateRequest, Side};
use crate::error::Failure;
use crate::provider::Server;
use crate::report::headline::FIGURES;
use crate::run::{self, RunOptions, run_on};
use crate::scenario::{DatabasePlan, Plan};
use anyhow::{Context, anyhow};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// What measuring did, for the verdict and the times it reports.
#[derive(Debug, Clone, Default)]
pub struct Measurement {
    /// Pairs whose runs all ended.
    pub pairs_done: u32,
    pub interrupted: bool,
    /// The candidate's run that stopped on an error of its own (its workers could not start,
    /// say), and the error: the gate measures no further, and fails.
    pub cand_stopped: Option<String>,
    /// Seconds spent in `--prepare`, and in the pairs (servers included).
    pub prepare_s: f64,
    pub measure_s: f64,
}

/// Where run `k` (from 1) of one side of a scenario goes.
pub fn run_dir(out: &Path, half: &str, side: Side, k: u32) -> PathBuf {
    side_dir(out, half, side).join(format!("r{k}"))
}

/// The directory of one side's runs of a scenario: what `compare` reads.
pub fn side_dir(out: &Path, half: &str, side: Side) -> PathBuf {
    out.join(safe(half)).join(side.as_str())
}

/// A scenario's name as a directory's.
fn safe(name: &str) -> String {
    name.chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                true => c,
                false => '_',
            },
        )
        .collect()
}

/// Prepares both checkouts, then measures every pair on one server.
pub async fn measure(
    request: &GateRequest,
    plan: &GatePlan,
    shutdown: &CancellationToken,
) -> Result<Measurement, Failure> {
    let mut done = Measurement::default();
    for half in &plan.halves {
        for side in Side::BOTH {
            let dir = side_dir(&request.out_dir, &half.name, side);
            if dir.exists() {
                std::fs::remove_dir_all(&dir)
                    .with_context(|| format!("clearing an earlier gate's {}", dir.display()))?;
            }
        }
    }
    let started = Instant::now();
    if let Some(command) = &request.prepare {
        for side in Side::BOTH {
            if !prepare(request, command, side, shutdown).await? {
                done.interrupted = true;
                return Ok(done);
            }
        }
    }
    done.prepare_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let servers = match provision_all(plan, request).await {
        Ok(servers) => servers,
        Err((servers, e)) => {
            tear_down(servers, request).await;
            return Err(e);
        }
    };
    let result = pairs(request, plan, &servers, shutdown, &mut done).await;
    tear_down(servers, request).await;
    done.measure_s = started.elapsed().as_secs_f64();
    result.map(|()| done)
}

/// Runs `command` in the side's checkout; false when Ctrl-C stopped it.
async fn prepare(
    request: &GateRequest,
    command: &str,
    side: Side,
    shutdown: &CancellationToken,
) -> Result<bool, Failure> {
    let root = match side {
        Side::Base => &request.base,
        Side::Cand => &request.cand,
    };
    let log_path = request
        .out_dir
        .join(format!("prepare-{}.log", side.as_str()));
    let log = std::fs::File::create(&log_path)
        .with_context(|| format!("creating {}", log_path.display()))?;
    request.status.line(&format!(
        "preparing the {} checkout: {command}",
        side.as_str()
    ));
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(root)
        .env("DBQ_GATE_SIDE", side.as_str())
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().context("opening the prepare log")?)
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("--prepare: cannot start sh in {}", root.display()))?;
    let status = tokio::select! {
        status = child.wait() => status.context("--prepare: waiting for it")?,
        () = shutdown.cancelled() => return Ok(false),
    };
    if !status.success() {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        let last = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return Err(Failure::Run(anyhow!(
            "--prepare failed in the {} checkout ({status}; {}): {last}",
            side.as_str(),
            log_path.display()
        )));
    }
    Ok(true)
}

/// The gate's servers, each with the `[database]` it serves.
type Servers = Vec<(DatabasePlan, Arc<Server>)>;

/// A server for each distinct `[database]` (one, unless the sides were allowed to differ);
/// on an error the servers already started are handed back, to be torn down.
async fn provision_all(
    plan: &GatePlan,
    request: &GateRequest,
) -> Result<Servers, (Servers, Failure)> {
    let mut servers: Servers = Vec::new();
    for half in &plan.halves {
        for side in Side::BOTH {
            let db = &half.plan(side).database;
            if servers.iter().any(|(d, _)| d == db) {
                continue;
            }
            match run::provision(half.plan(side), &request.status).await {
                Ok(server) => servers.push((db.clone(), server)),
                Err(e) => return Err((servers, e)),
            }
        }
    }
    Ok(servers)
}

async fn tear_down(servers: Servers, request: &GateRequest) {
    for (_, server) in servers {
        run::release(server, false, &request.status).await;
    }
}

/// Every pair, scenario by scenario within a pair, the order of the sides alternating.
async fn pairs(
    request: &GateRequest,
    plan: &GatePlan,
    servers: &Servers,
    shutdown: &CancellationToken,
    done: &mut Measurement,
) -> Result<(), Failure> {
    for k in 1..=request.pairs {
        let order = match k % 2 {
            1 => [Side::Base, Side::Cand],
            _ => [Side::Cand, Side::Base],
        };
        for half in &plan.halves {
            for side in order {
                let dir = run_dir(&request.out_dir, &half.name, side, k);
                let plan = half.plan(side);
                match one(plan, &dir, servers, shutdown).await {
                    Ok(Ran::Measured(said)) => request.status.line(&format!(
                        "pair {k}/{}: {} {}: {said}",
                        request.pairs,
                        half.name,
                        side.as_str()
                    )),
                    Ok(Ran::Stopped(error)) => {
                        if side == Side::Base {
                            return Err(Failure::Run(anyhow!(
                                "the base's r{k} of {} stopped on an error, so the gate has nothing to hold the candidate against: {error}",
                                half.name
                            )));
                        }
                        done.cand_stopped = Some(format!(
                            "{}: the candidate's r{k} stopped on an error: {error}",
                            half.name
                        ));
                        return Ok(());
                    }
                    Err(Failure::Interrupted) => {
                        done.interrupted = true;
                        return Ok(());
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        done.pairs_done = k;
    }
    Ok(())
}

/// How one run went.
enum Ran {
    /// Its headline figures in a few words.
    Measured(String),
    /// A fatal error of the run's own stopped it (its results say so).
    Stopped(String),
}

/// One run on the server of its `[database]`.
async fn one(
    plan: &Plan,
    dir: &Path,
    servers: &Servers,
    shutdown: &CancellationToken,
) -> Result<Ran, Failure> {
    if shutdown.is_cancelled() {
        return Err(Failure::Interrupted);
    }
    let Some((_, server)) = servers.iter().find(|(db, _)| db == &plan.database) else {
        return Err(Failure::Run(anyhow!("no server for {}", plan.source)));
    };
    let opts = RunOptions {
        out_dir: Some(dir.to_path_buf()),
        status: crate::status::for_command(true),
        ..Default::default()
    };
    match run_on(plan, &opts, server, shutdown).await {
        Ok(o) if o.results.summary.interrupted => Err(Failure::Interrupted),
        Ok(o) => Ok(match &o.results.summary.fatal_error {
            Some(error) => Ran::Stopped(error.clone()),
            None => Ran::Measured(headline(&o.results.summary)),
        }),
        Err(Failure::Interrupted) => Err(Failure::Interrupted),
        // A run stopped by an error may still have written its results, which the verdict
        // reads (as a run that did not end as planned); one that wrote none stops the gate.
        Err(e) if dir.join("summary.json").is_file() => Ok(Ran::Stopped(e.to_string())),
        Err(e) => Err(Failure::Run(anyhow!(
            "{} could not be measured ({}): {e}",
            plan.source,
            dir.display()
        ))),
    }
}

/// `jobs/s while busy 1234, claim p50 ms 0.21, e2e p99 ms 4.50, lost 0`.
fn headline(s: &crate::report::Summary) -> String {
    let mut parts = Vec::new();
    for f in FIGURES.iter().filter(|f| f.ungated_because.is_none()) {
        let v = (f.read)(s);
        match f.key {
            "completed_per_s" => {}
            k if k.ends_with("_ms") && v.is_finite() => parts.push(format!("{} {v:.2}", f.heading)),
            _ if v.is_finite() => parts.push(format!("{} {v:.0}", f.heading)),
            _ => {}
        }
    }
    parts.join(", ")
}
