//! Faults on worker processes: SIGKILL, and SIGSTOP/SIGCONT.

use super::Job;
use crate::fleet::sleep_or_stop;
use crate::metrics::Event;
use nix::sys::signal::{Signal, kill as signal};
use nix::unistd::Pid;
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

/// SIGSTOPs up to `count` worker processes (those holding a job first) until `until_us`
/// (or until the run is stopped), then SIGCONTs them.
pub(super) async fn freeze(job: &mut Job, count: usize, until_us: u64, stop: &CancellationToken) {
    let at = job.now();
    let victims = job.ctx.registry.pick_processes(count, &mut job.rng);
    let mut frozen = Vec::new();
    for (slot, pid) in victims {
        if signal(Pid::from_raw(pid), Signal::SIGSTOP).is_ok() {
            let held = job.ctx.registry.in_flight(slot);
            job.emit(Event::WorkerFrozen {
                at_us: job.now(),
                slot,
                job: held,
            });
            frozen.push((slot, pid, held));
        }
    }
    sleep_or_stop(job.ctx.clock.until(until_us), stop).await;
    for (_, pid, _) in &frozen {
        let _ = signal(Pid::from_raw(*pid), Signal::SIGCONT);
    }
    let detail: Vec<String> = frozen
        .iter()
        .map(|(slot, pid, held)| {
            format!(
                "slot {slot} pid {pid} holding {}",
                held.map_or("no job".into(), |j| format!("job {j}"))
            )
        })
        .collect();
    job.record(
        at,
        job.now(),
        frozen.len() as u64,
        format!("SIGSTOP/SIGCONT {}", detail.join(", ")),
    );
}
