//! Faults on workers: SIGKILL and SIGSTOP/SIGCONT of worker processes, and a pause of every
//! worker.

use super::Job;
use crate::backend::{JobStatus, Link};
use crate::fleet::sleep_or_stop;
use crate::metrics::{Event, JobId};
use crate::scenario::ClaimMode;
use nix::sys::signal::{Signal, kill as signal};
use nix::unistd::Pid;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// SIGKILLs up to `count` running worker processes (those holding a job first). Their
/// supervisors report the deaths and restart them.
pub(super) async fn kill(job: &mut Job, count: usize) {
    let at = job.now();
    let victims = job.ctx.registry.pick_processes(count, &mut job.rng);
    let mut killed = Vec::new();
    for (slot, pid) in &victims {
        if signal(Pid::from_raw(*pid), Signal::SIGKILL).is_ok() {
            killed.push(format!("slot {slot} pid {pid}"));
        }
    }
    job.record(
        at,
        at,
        killed.len() as u64,
        format!("SIGKILL {}", killed.join(", ")),
    );
}

/// Every worker takes no job until `until_us` (or until the run is stopped): task workers
/// through the registry, worker processes stopped and continued.
pub(super) async fn pause(job: &Job, until_us: u64, stop: &CancellationToken) {
    let at = job.now();
    let registry = &job.ctx.registry;
    registry.pause_until(until_us);
    let pids: Vec<i32> = (0..registry.len() as u32)
        .map(|slot| registry.pid(slot))
        .filter(|pid| *pid > 0)
        .filter(|pid| signal(Pid::from_raw(*pid), Signal::SIGSTOP).is_ok())
        .collect();
    sleep_or_stop(job.ctx.clock.until(until_us), stop).await;
    for pid in &pids {
        let _ = signal(Pid::from_raw(*pid), Signal::SIGCONT);
    }
    registry.pause_until(0);
    let detail = match pids.len() {
        0 => format!("{} worker(s) took no job", registry.len()),
        n => format!("{n} worker process(es) stopped (SIGSTOP) and continued"),
    };
    job.record(at, job.now(), registry.len() as u64, detail);
}

/// How long a freeze keeps looking for workers caught holding a job.
const FREEZE_SEARCH: Duration = Duration::from_secs(2);

/// SIGSTOPs up to `count` worker processes until `until_us` (or until the run is stopped),
/// then SIGCONTs them.
///
/// A freeze is meant to catch a worker holding a job: the worker registry only says what a
/// process reported, which lags behind it, so each stopped worker is checked with the server
/// (its session `idle in transaction`) and with its own reports (a job in hand, once what it
/// wrote before the stop has been read). A worker caught between jobs is thawed and another
/// tried, for up to [`FREEZE_SEARCH`]; after that, whatever was caught stays frozen.
pub(super) async fn freeze(job: &mut Job, count: usize, until_us: u64, stop: &CancellationToken) {
    let at = job.now();
    let mut conn = job.ctx.backend.connect("fault").await.ok();
    let deadline = tokio::time::Instant::now() + FREEZE_SEARCH;
    let mut frozen: Vec<(u32, i32, Vec<JobId>, u64)> = Vec::new();
    while frozen.len() < count && !stop.is_cancelled() {
        let last_try = tokio::time::Instant::now() >= deadline;
        let taken: Vec<u32> = frozen.iter().map(|f| f.0).collect();
        let candidates: Vec<(u32, i32)> = job
            .ctx
            .registry
            .pick_processes(job.ctx.registry.len(), &mut job.rng)
            .into_iter()
            .filter(|(slot, _)| !taken.contains(slot))
            .collect();
        // No process to try yet (a library's workers may still be starting when the fault
        // is due, on a loaded machine): look again until the search's deadline.
        if candidates.is_empty() && last_try {
            break;
        }
        for (slot, pid) in candidates {
            if frozen.len() >= count {
                break;
            }
            // The moment it stopped, not the end of the search: on a loaded machine the
            // check below can outlast the reaper, which may take the job back before it.
            let stopped_at = job.now();
            if signal(Pid::from_raw(pid), Signal::SIGSTOP).is_err() {
                continue;
            }
            let holding = holds_jobs(job, conn.as_mut(), slot).await;
            if !holding.is_empty() || last_try {
                frozen.push((slot, pid, holding, stopped_at));
            } else {
                let _ = signal(Pid::from_raw(pid), Signal::SIGCONT);
            }
        }
        if frozen.len() < count && !sleep_or_stop(Duration::from_millis(20), stop).await {
            break;
        }
    }
    if let Some(c) = conn {
        c.close().await;
    }
    for (slot, _, held, stopped_at) in &frozen {
        job.emit(Event::WorkerFrozen {
            at_us: *stopped_at,
            slot: *slot,
            jobs: held.clone(),
        });
    }
    sleep_or_stop(job.ctx.clock.until(until_us), stop).await;
    for (_, pid, _, _) in &frozen {
        let _ = signal(Pid::from_raw(*pid), Signal::SIGCONT);
    }
    let detail: Vec<String> = frozen
        .iter()
        .map(|(slot, pid, held, _)| format!("slot {slot} pid {pid} holding {}", holding(held)))
        .collect();
    job.record(
        at,
        job.now(),
        frozen.len() as u64,
        format!("SIGSTOP/SIGCONT {}", detail.join(", ")),
    );
}

/// `no job`, `job 7`, `jobs 7, 8`.
fn holding(held: &[JobId]) -> String {
    match held {
        [] => "no job".to_string(),
        [j] => format!("job {j}"),
        jobs => {
            let ids: Vec<String> = jobs.iter().map(|j| j.to_string()).collect();
            format!("jobs {}", ids.join(", "))
        }
    }
}

/// The jobs a just-stopped worker holds, if it was caught with jobs in hand (and, in
/// `in_transaction` mode, inside the transaction that claimed it, as far as the server can
/// tell). Waits for a statement in flight to finish (the server answers it though the
/// client is stopped) and for the worker's last reports to be read; then asks the server
/// how the reported jobs stand, for a report lags behind its worker: on a loaded machine a
/// worker stopped just after its completion committed still reads as holding the job it
/// finished, which no reaper can take back. Without a connection to ask, or a server that
/// cannot tell, trusts the reports alone.
async fn holds_jobs(job: &Job, mut conn: Option<&mut Box<dyn Link>>, slot: u32) -> Vec<JobId> {
    let role = format!("worker-{slot}");
    let mut in_transaction = true;
    if let Some(conn) = conn.as_deref_mut() {
        let state = settled_state(conn, &role).await;
        if job.ctx.claim_mode == Some(ClaimMode::InTransaction) {
            in_transaction = state.is_none_or(|s| s.as_deref() == Some("idle in transaction"));
        }
    }
    // What the worker wrote before it stopped reaches the registry within milliseconds.
    tokio::time::sleep(Duration::from_millis(50)).await;
    if !in_transaction {
        return Vec::new();
    }
    let held = job.ctx.registry.held(slot);
    match conn {
        Some(conn) if !held.is_empty() => unfinished(conn, held).await,
        _ => held,
    }
}

/// The state of the session in `role` once a statement in flight has finished (up to half a
/// second): `None` where the engine cannot tell, `Some(None)` when there is no such session.
async fn settled_state(conn: &mut Box<dyn Link>, role: &str) -> Option<Option<String>> {
    let states = conn.session_states()?;
    let mut state = Some(None);
    for _ in 0..50 {
        state = match states.session_state(role).await {
            Ok(state) => Some(state),
            Err(_) => Some(None),
        };
        if state
            .as_ref()
            .is_some_and(|s| s.as_deref() != Some("active"))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    state
}

/// `held` less the jobs the server says have finished (done or dead-lettered); a job it
/// cannot place, or a server that cannot answer, leaves the report as it is.
async fn unfinished(conn: &mut Box<dyn Link>, held: Vec<JobId>) -> Vec<JobId> {
    let Ok(statuses) = conn.job_statuses(&held).await else {
        return held;
    };
    let finished: Vec<JobId> = statuses
        .into_iter()
        .filter(|(_, s, _)| matches!(s, JobStatus::Done | JobStatus::DeadLetter))
        .map(|(id, _, _)| id)
        .collect();
    held.into_iter()
        .filter(|id| !finished.contains(id))
        .collect()
}
