//! A step's time line, fixed before its load starts (its windows, each phase's producer
//! schedule and faults), and what its load runs against.

use crate::backend::Backend;
use crate::clock::RunClock;
use crate::faults::PhaseFaults;
use crate::fleet::pacer::ScheduledPhase;
use crate::metrics::{PhaseWindow, WindowKind};
use crate::provider::Server;
use crate::scenario::{Plan, Rate};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Time between starting the fleets and the first phase, so every producer is connected
/// before its first scheduled job.
const LOAD_LEAD: Duration = Duration::from_millis(200);
/// A step's time line, fixed before its load starts: a window before the load (the prefill
/// on a run's first step), one per phase, and the drain; each phase's producer schedule and
/// faults.
pub(super) struct Timeline {
    pub(super) windows: Vec<PhaseWindow>,
    pub(super) scheduled: Vec<ScheduledPhase>,
    pub(super) phase_faults: Vec<PhaseFaults>,
    pub(super) load_start_us: u64,
    pub(super) load_start_wall: SystemTime,
    /// When the last phase ends, on the run clock.
    pub(super) end_us: u64,
}

impl Timeline {
    pub(super) fn of(plan: &Plan, clock: RunClock) -> Timeline {
        let load_start_us = clock.now_us() + LOAD_LEAD.as_micros() as u64;
        let load_start_wall = SystemTime::now() + LOAD_LEAD;
        let mut windows = vec![PhaseWindow::new(
            "prefill",
            WindowKind::Prefill,
            0,
            load_start_us,
            false,
        )];
        let mut scheduled = Vec::new();
        let mut phase_faults = Vec::new();
        let mut t = load_start_us;
        for p in &plan.phases {
            let end = t + p.duration.as_micros() as u64;
            let offered = match p.rate {
                Rate::PerSecond(r) => Some(r),
                Rate::Max => None,
            };
            let kinds = p.faults.iter().map(|f| f.kind().to_string()).collect();
            windows.push(
                PhaseWindow::new(&p.name, WindowKind::Phase, t, end, p.measured)
                    .offering(offered, kinds),
            );
            scheduled.push(ScheduledPhase {
                start_us: t,
                end_us: end,
                rate: p.rate,
            });
            phase_faults.push(PhaseFaults {
                phase: p.name.clone(),
                start_us: t,
                end_us: end,
                faults: p.faults.clone(),
            });
            t = end;
        }
        windows.push(PhaseWindow::new(
            "drain",
            WindowKind::Drain,
            t,
            u64::MAX,
            false,
        ));
        Timeline {
            windows,
            scheduled,
            phase_faults,
            load_start_us,
            load_start_wall,
            end_us: t,
        }
    }
}

/// What a step's load runs against: the queue, its server when it has one (for faults that
/// restart it), the run's clock, and the step's place in the session.
pub(super) struct LoadTarget {
    pub backend: Arc<dyn Backend>,
    pub server: Option<Arc<Server>>,
    pub clock: RunClock,
    /// Steps run before this one on the same queue.
    pub step: usize,
    /// Unique keys of this step's jobs start with this.
    pub key_prefix: String,
    /// Analyze the queue table [`ANALYZE_AFTER`] into the load (it was empty at set-up), and
    /// again each time it doubles.
    pub analyze: bool,
    /// The step's results directory, where its journal is kept while it runs.
    pub out_dir: PathBuf,
}
