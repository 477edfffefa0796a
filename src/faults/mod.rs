//! Fault injection: each phase's `[[phases.faults]]` carried out on the run clock.
//!
//! Every fault is a driver task started with the run; it waits for its phase, acts, and
//! reports a [`FaultRecord`] (and, where it has them, table statistics) to the recorder.
//! Drivers reach workers only through the [`WorkerRegistry`], the database through
//! connections of their own (role `fault…`, through the backend seam), and the server only
//! through [`Server::restart`]. Which faults an engine runs is the engine table's to say
//! (the plan refuses the others). Everything a driver holds (frozen processes, open
//! transactions, idle connections) is released when its phase ends or the run is stopped.

mod database;
mod workers;

use crate::backend::Backend;
use crate::backend::Engine;
use crate::clock::RunClock;
use crate::fleet::registry::WorkerRegistry;
use crate::fleet::sleep_or_stop;
use crate::metrics::{Event, FaultRecord};
use crate::provider::Server;
use crate::scenario::{ClaimMode, FaultSpec, HumanDuration, Repeat};
use rand::SeedableRng;
use rand::distr::Distribution;
use rand::rngs::StdRng;
use rand_distr::Exp;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// What fault drivers may use.
#[derive(Clone)]
pub struct FaultContext {
    pub clock: RunClock,
    pub events: crate::metrics::EventSink,
    pub backend: Arc<dyn Backend>,
    /// The engine, whose words the fault records use.
    pub engine: Engine,
    pub registry: Arc<WorkerRegistry>,
    /// The server, when the run has one it may restart.
    pub server: Option<Arc<Server>>,
    /// How long to wait for a restarted server.
    pub startup_timeout: Duration,
    pub seed: u64,
    /// Where a harness's worker holds its job: inside a transaction, or between two. None
    /// for a library's workers, whose claim is their own: a job is in hand from the
    /// handler's start to its report.
    pub claim_mode: Option<ClaimMode>,
}

/// The faults of one phase and its window on the run clock.
#[derive(Debug, Clone)]
pub struct PhaseFaults {
    pub phase: String,
    pub start_us: u64,
    pub end_us: u64,
    pub faults: Vec<FaultSpec>,
}

/// One fault of one phase, as a driver sees it.
struct Job {
    spec: FaultSpec,
    phase: String,
    start_us: u64,
    end_us: u64,
    ctx: FaultContext,
    rng: StdRng,
}

impl Job {
    fn record(&self, started_us: u64, ended_us: u64, count: u64, detail: String) {
        let record = FaultRecord {
            kind: self.spec.kind().into(),
            phase: self.phase.clone(),
            started_us,
            ended_us,
            count,
            detail,
        };
        let _ = self.ctx.events.send(Event::Fault(record));
    }

    fn emit(&self, event: Event) {
        let _ = self.ctx.events.send(event);
    }

    fn now(&self) -> u64 {
        self.ctx.clock.now_us()
    }

    /// Sleeps until `at_us` on the run clock; false if the run was stopped first.
    async fn wait_until(&self, at_us: u64, stop: &CancellationToken) -> bool {
        sleep_or_stop(self.ctx.clock.until(at_us), stop).await
    }

    /// The run-clock times at which a repeated fault fires within its phase.
    /// A fault held for its own length (`for`) ends then, past the phase's end if need be
    /// (the end of the load ends it at the latest).
    fn hold_for(&mut self, hold: Option<HumanDuration>) {
        if let Some(d) = hold {
            self.end_us = self.start_us + d.0.as_micros() as u64;
        }
    }

    fn firings(&mut self, repeat: Repeat) -> Vec<u64> {
        let mut times = Vec::new();
        let mut t = self.start_us as f64;
        loop {
            t += match repeat {
                Repeat::Every(d) => d.as_micros() as f64,
                Repeat::Rate(r) => {
                    Exp::new(r / 1e6).map_or(f64::INFINITY, |e| e.sample(&mut self.rng))
                }
            };
            if !t.is_finite() || t >= self.end_us as f64 {
                return times;
            }
            times.push(t as u64);
        }
    }
}

/// Starts a driver for every fault of every phase. The drivers end with their phases, or
/// when `stop` is cancelled.
pub fn spawn(ctx: &FaultContext, phases: &[PhaseFaults], stop: &CancellationToken) -> JoinSet<()> {
    let mut set = JoinSet::new();
    for (i, p) in phases.iter().enumerate() {
        for (j, spec) in p.faults.iter().enumerate() {
            let job = Job {
                spec: spec.clone(),
                phase: p.phase.clone(),
                start_us: p.start_us,
                end_us: p.end_us,
                ctx: ctx.clone(),
                rng: StdRng::seed_from_u64(
                    ctx.seed ^ ((i as u64) << 32 | j as u64).wrapping_mul(0x2545_F491_4F6C_DD1D),
                ),
            };
            set.spawn(drive(job, stop.clone()));
        }
    }
    set
}

async fn drive(mut job: Job, stop: CancellationToken) {
    if !fire_repeatedly(&mut job, &stop).await {
        fire_once(job, stop).await;
    }
}

/// A fault that fires again and again (`every` or `rate`): crashes, kills and terminated
/// sessions; false for any other.
async fn fire_repeatedly(job: &mut Job, stop: &CancellationToken) -> bool {
    let Some(repeat) = job.spec.repeat() else {
        return false;
    };
    let spec = job.spec.clone();
    for t in job.firings(repeat) {
        if !job.wait_until(t, stop).await {
            return true;
        }
        match spec {
            FaultSpec::CrashWorkers { count, at, .. } => {
                let armed = job
                    .ctx
                    .registry
                    .arm_crashes(count as usize, at, &mut job.rng);
                let detail = format!("{armed} worker(s) armed to crash {at:?}");
                job.record(t, t, armed as u64, detail);
            }
            FaultSpec::KillWorkers { count, .. } => workers::kill(job, count as usize).await,
            FaultSpec::KillBackends { target, count, .. } => {
                database::kill_backends(job, target, count).await
            }
            // Only the three above repeat (`FaultSpec::repeat`).
            _ => return false,
        }
    }
    true
}

/// A fault that runs once: at a time of its phase, or for the whole phase.
async fn fire_once(mut job: Job, stop: CancellationToken) {
    let from_start = job.start_us;
    match job.spec.clone() {
        FaultSpec::CrashWorkers { .. }
        | FaultSpec::KillWorkers { .. }
        | FaultSpec::KillBackends { .. } => {}
        FaultSpec::FreezeWorkers { count, after, hold } => {
            let from = job.start_us + after.0.as_micros() as u64;
            let until = hold.map_or(job.end_us, |h| {
                (from + h.0.as_micros() as u64).min(job.end_us)
            });
            if job.wait_until(from, &stop).await {
                workers::freeze(&mut job, count as usize, until, &stop).await;
            }
        }
        FaultSpec::PauseWorkers { after, hold } => {
            let from = job.start_us + after.0.as_micros() as u64;
            if job.wait_until(from, &stop).await {
                workers::pause(&job, from + hold.0.as_micros() as u64, &stop).await;
            }
        }
        FaultSpec::RestartServer {
            after,
            down_for,
            mode,
        } => {
            let at = job.start_us + after.0.as_micros() as u64;
            if job.wait_until(at, &stop).await {
                database::restart_server(&job, mode, down_for.0).await;
            }
        }
        FaultSpec::IdleInTransaction { hold } => {
            job.hold_for(hold);
            if job.wait_until(from_start, &stop).await {
                database::hold_xmin(&job, &stop).await;
            }
        }
        FaultSpec::DelayVacuum { hold } => {
            job.hold_for(hold);
            if job.wait_until(from_start, &stop).await {
                database::delay_vacuum(&job, &stop).await;
            }
        }
        FaultSpec::ActiveReaders { count } => {
            if job.wait_until(from_start, &stop).await {
                database::active_readers(&job, count, &stop).await;
            }
        }
        FaultSpec::PoolExhaustion { connections } => {
            if job.wait_until(from_start, &stop).await {
                database::hold_connections(&job, connections, &stop).await;
            }
        }
        FaultSpec::Analyze { after } => {
            let at = job.start_us + after.0.as_micros() as u64;
            if job.wait_until(at, &stop).await {
                database::analyze(&job).await;
            }
        }
    }
}
