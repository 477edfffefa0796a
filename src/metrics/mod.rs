//! Measurements: the events fleets send (`event`), HDR histograms per metric
//! (`histogram`), the harness's job ledger (`ledger`), the recorder that turns events into
//! figures (`recorder`), live counters for progress and drain (`live`), and the
//! database sampler (`sampler`).

pub mod event;
pub mod harness;
pub mod histogram;
pub mod ledger;
pub mod live;
pub mod recorder;
pub mod sampler;

pub use event::{Event, FaultRecord, JobId};
pub use harness::{HarnessMonitor, HarnessSample, HarnessSummary};
pub use histogram::{LatencyReport, LatencySummary, Metric, MetricSet};
pub use ledger::{IdSet, Ledger, LedgerEntry};
pub use live::{LiveSnapshot, LiveStats};
pub use recorder::{
    ClaimProbeRecord, FrozenJob, Measurements, PhaseCounts, PhaseWindow, Recorder, Snapshot,
    SnapshotRequest, TableProbe, TimelineRow, WindowKind,
};
pub use sampler::DbSampler;
