//! Measurements: the events fleets send (`event`), HDR histograms per metric
//! (`histogram`), the harness's job ledger (`ledger`) and its copy on disk as the run goes
//! (`journal`), the recorder that turns events into
//! figures (`recorder`, a second at a time: `second`) and those figures as plain data
//! (`measurements`), live counters for progress and drain (`live`), the database sampler
//! (`sampler`), and the harness's figures of itself and its machine (`harness`, `monitor`,
//! `machine`).

pub mod event;
pub mod harness;
pub mod histogram;
pub mod journal;
pub mod ledger;
pub mod live;
pub mod machine;
pub mod measurements;
pub mod monitor;
pub mod recorder;
pub mod sampler;
mod second;
pub mod sink;

pub use event::{Event, FaultRecord, JobId};
pub use harness::{HarnessSample, HarnessSummary};
pub use histogram::{LatencyReport, LatencySummary, Metric, MetricSet};
pub use ledger::{IdSet, Ledger, LedgerEntry};
pub use live::{LiveSnapshot, LiveStats};
pub use measurements::{
    AnalyzedRecord, ClaimProbeRecord, FrozenJob, LibraryWorkers, Measurements, OrphanedJob,
    PhaseCounts, PhaseWindow, TableProbe, TimelineRow, WORKER_DIED, WindowKind,
};
pub use monitor::HarnessMonitor;
pub use recorder::{Recorder, Snapshot, SnapshotRequest};
pub use sampler::DbSampler;
pub use sink::EventSink;
