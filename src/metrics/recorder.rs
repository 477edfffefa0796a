//! The recorder: the one place where events become figures.
//!
//! It attributes each sample to a phase window and to a one-second timeline bucket, keeps
//! the ledger, writes every finished second into an HdrHistogram interval log, and keeps the
//! live counters current.
//!
//! Attribution rules (also in docs/GUIDE.md):
//! - latencies measured from a job's intended enqueue time (`enqueue`, `schedule_lag`,
//!   `queue_wait`, `end_to_end`) belong to the phase whose window holds that intended time,
//!   so a backlog built in one phase is charged to it even when the jobs finish later;
//! - statement timings (`claim`, `handler`) and counts (enqueued, completed, failed) belong
//!   to the window holding the moment they happened (commit or return);
//! - timeline seconds and interval-log intervals hold what happened in that second.

use super::event::{Event, FaultRecord, JobId};
use super::histogram::{Metric, MetricSet};
use super::journal::Journal;
use super::ledger::Ledger;
use super::live::LiveStats;
use super::measurements::{
    AnalyzedRecord, ClaimProbeRecord, FrozenJob, LibraryWorkers, Measurements, OrphanedJob,
    PhaseCounts, PhaseWindow, TableProbe, TimelineRow, WindowKind,
};
use crate::backend::{DbSample, JobStatus};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::IntervalLogWriter;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::mpsc::error::TryRecvError;

/// The figures so far, for judging thresholds while the run goes on.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub windows: Vec<PhaseWindow>,
    pub counts: Vec<PhaseCounts>,
    pub metrics: Vec<MetricSet>,
}

/// A request for a [`Snapshot`], answered on the enclosed channel.
pub type SnapshotRequest = tokio::sync::oneshot::Sender<Snapshot>;

use super::second::SecondBucket;

mod crashes;
mod events;

pub struct Recorder {
    windows: Vec<PhaseWindow>,
    counts: Vec<PhaseCounts>,
    metrics: Vec<MetricSet>,
    last_finished_us: Vec<u64>,
    seconds: BTreeMap<i64, SecondBucket>,
    before_load: SecondBucket,
    /// Seconds below this have been written out.
    next_unwritten: i64,
    timeline: Vec<TimelineRow>,
    ledger: Ledger,
    live: Arc<LiveStats>,
    load_start_us: u64,
    late_after_us: u64,
    late_samples: u64,
    errors: BTreeMap<String, u64>,
    faults: Vec<FaultRecord>,
    frozen: Vec<FrozenJob>,
    /// The latest claims and finishes (job, when): see `on_worker_frozen`.
    recent_takes: std::collections::VecDeque<(JobId, u64)>,
    orphaned: Vec<OrphanedJob>,
    probes: Vec<TableProbe>,
    fatal: Option<String>,
    db_samples: Vec<(u64, DbSample)>,
    harness: Vec<super::harness::HarnessSample>,
    claim_probes: Vec<ClaimProbeRecord>,
    analyzed: Vec<AnalyzedRecord>,
    /// What library workers said at their hello, each distinct saying once.
    library_workers: Vec<LibraryWorkers>,
    /// Set when an event made some outcome uncertain; cleared when the live list is updated.
    doubt_changed: bool,
}

/// Recent claims and finishes kept for a late-reported freeze (seconds of them at 10k jobs/s).
const RECENT_TAKES: usize = 65_536;

/// How long a second stays open for events that arrive late.
const GRACE_SECONDS: i64 = 2;

/// How often the recorder reads the events sent since its last read.
const DRAIN_EVERY: Duration = Duration::from_millis(5);

impl Recorder {
    /// `windows` must cover the run in order (prefill, phases, drain).
    pub fn new(
        windows: Vec<PhaseWindow>,
        load_start_us: u64,
        late_after: Duration,
        live: Arc<LiveStats>,
    ) -> Recorder {
        let ledger = Ledger::default();
        let n = windows.len();
        Recorder {
            windows,
            counts: vec![PhaseCounts::default(); n],
            metrics: vec![MetricSet::default(); n],
            last_finished_us: vec![0; n],
            seconds: BTreeMap::new(),
            before_load: SecondBucket::default(),
            next_unwritten: 0,
            timeline: Vec::new(),
            ledger,
            live,
            load_start_us,
            late_after_us: late_after.as_micros() as u64,
            late_samples: 0,
            errors: BTreeMap::new(),
            faults: Vec::new(),
            frozen: Vec::new(),
            recent_takes: std::collections::VecDeque::new(),
            orphaned: Vec::new(),
            probes: Vec::new(),
            db_samples: Vec::new(),
            harness: Vec::new(),
            fatal: None,
            claim_probes: Vec::new(),
            analyzed: Vec::new(),
            library_workers: Vec::new(),
            doubt_changed: false,
        }
    }

    fn window_of(&self, t_us: u64) -> usize {
        self.windows
            .iter()
            .position(|w| t_us >= w.start_us && t_us < w.end_us)
            .unwrap_or(if t_us < self.load_start_us {
                0
            } else {
                self.windows.len() - 1
            })
    }

    /// The timeline second of `t_us`; events before the load started (prefill, workers
    /// polling while producers connect) go to a bucket that is never written.
    fn bucket(&mut self, t_us: u64) -> &mut SecondBucket {
        if t_us < self.load_start_us {
            return &mut self.before_load;
        }
        let mut s = (t_us as i64 - self.load_start_us as i64).div_euclid(1_000_000);
        if s < self.next_unwritten {
            self.late_samples += 1;
            s = self.next_unwritten;
        }
        self.seconds.entry(s).or_default()
    }

    fn note_error(&mut self, error: String) {
        if self.errors.len() < 20 || self.errors.contains_key(&error) {
            *self.errors.entry(error).or_default() += 1;
        }
    }

    /// A permanent error: the first one is the run's (and stops it, through the live stats).
    fn fatal(&mut self, role: &str, error: &str) {
        let line = format!("{role}: {error}");
        self.live.set_fatal(&line);
        self.fatal.get_or_insert(line);
        self.note_error(format!("fatal: {error}"));
    }

    /// A prefill batch: every job enqueued, its insert latency recorded once per job.
    fn prefilled(
        &mut self,
        runs: &[(JobId, u32)],
        (poison, crash): (u64, u64),
        sent_us: u64,
        committed_us: u64,
    ) {
        let mut n = 0;
        for &(first, len) in runs {
            for id in first..first + i64::from(len) {
                self.ledger.enqueued(id);
            }
            n += u64::from(len);
        }
        self.live.add_enqueued_n(n);
        let latency = committed_us.saturating_sub(sent_us);
        let (wi, wc) = (self.window_of(sent_us), self.window_of(committed_us));
        self.metrics[wi].record_n(Metric::Enqueue, latency, n);
        let c = &mut self.counts[wc];
        c.enqueued += n;
        c.poison_enqueued += poison;
        c.crash_enqueued += crash;
        let b = self.bucket(committed_us);
        b.counts.enqueued += n;
        b.metrics.record_n(Metric::Enqueue, latency, n);
    }

    /// When the load stops before the planned end (Ctrl-C), phases end where it stopped and
    /// the drain starts there, so throughput is divided by the time really spent.
    fn clip_phases(&mut self, at_us: u64) {
        let planned_end = self
            .windows
            .iter()
            .filter(|w| w.kind == WindowKind::Phase)
            .map(|w| w.end_us)
            .max()
            .unwrap_or(0);
        if at_us >= planned_end {
            return;
        }
        for w in &mut self.windows {
            match w.kind {
                WindowKind::Phase => {
                    w.start_us = w.start_us.min(at_us);
                    w.end_us = w.end_us.min(at_us);
                }
                WindowKind::Drain => w.start_us = at_us,
                WindowKind::Prefill => {}
            }
        }
    }

    /// Writes out every second below `until` (exclusive).
    fn write_seconds<W: std::io::Write>(
        &mut self,
        until: i64,
        log: &mut IntervalLogWriter<'_, '_, W, V2DeflateSerializer>,
    ) {
        while let Some((&s, _)) = self.seconds.first_key_value() {
            if s >= until {
                break;
            }
            let (s, b) = self.seconds.pop_first().expect("checked above");
            self.write_second(s, b, log);
        }
        self.next_unwritten = self.next_unwritten.max(until);
    }

    fn write_second<W: std::io::Write>(
        &mut self,
        s: i64,
        b: SecondBucket,
        log: &mut IntervalLogWriter<'_, '_, W, V2DeflateSerializer>,
    ) {
        // Keep the timeline contiguous: a second without events is a row of zeros.
        if let Some(last) = self.timeline.last().map(|r| r.second) {
            for gap in last + 1..s {
                self.push_row(gap, &SecondBucket::default());
            }
        }
        b.log_into(s, log);
        let lag = b.metrics.get(Metric::ScheduleLag);
        self.live
            .set_lag_max(if lag.is_empty() { 0 } else { lag.max() });
        self.push_row(s, &b);
    }

    fn push_row(&mut self, s: i64, b: &SecondBucket) {
        let at_us = self.load_start_us + (s.max(0) as u64) * 1_000_000;
        let phase = self.windows[self.window_of(at_us)].name.clone();
        self.timeline.push(b.row(s, phase));
    }

    /// Consumes events until every sender is gone, writing finished seconds as it goes.
    /// `clock_now_us` reads the run clock; `load_start_wall` labels the interval log.
    /// `snapshots` answers requests for the figures so far (it may be closed at once).
    /// Each batch read is appended to `journal` before it is counted.
    pub async fn run(
        mut self,
        mut rx: UnboundedReceiver<Event>,
        mut snapshots: UnboundedReceiver<SnapshotRequest>,
        clock: crate::clock::RunClock,
        load_start_wall: SystemTime,
        mut journal: Journal,
    ) -> Measurements {
        let (mut hlog, mut serializer) = (Vec::new(), V2DeflateSerializer::new());
        let mut log = super::second::interval_log(load_start_wall)
            .begin_log_with(&mut hlog, &mut serializer)
            .expect("writing to memory");

        let mut tick = tokio::time::interval(Duration::from_millis(500));
        // Events are read in batches on a short timer rather than one wake-up per event:
        // every event carries its own timestamps, so reading them a few milliseconds later
        // changes no figure, and it spares the senders a cross-thread wake-up each.
        let mut drain = tokio::time::interval(DRAIN_EVERY);
        drain.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        'events: loop {
            tokio::select! {
                _ = drain.tick() => loop {
                    match rx.try_recv() {
                        Ok(e) => {
                            journal.record(&e);
                            self.handle(e)
                        }
                        Err(TryRecvError::Empty) => {
                            journal.flush();
                            break;
                        }
                        Err(TryRecvError::Disconnected) => break 'events,
                    }
                },
                Some(reply) = snapshots.recv() => {
                    let _ = reply.send(Snapshot { windows: self.windows.clone(), counts: self.counts.clone(), metrics: self.metrics.clone() });
                }
                _ = tick.tick() => {
                    if std::mem::take(&mut self.doubt_changed) {
                        self.live.set_unresolved(self.ledger.unresolved());
                    }
                    let now_s = (clock.now_us() as i64 - self.load_start_us as i64).div_euclid(1_000_000);
                    self.write_seconds(now_s - GRACE_SECONDS + 1, &mut log);
                }
            }
        }
        journal.flush();
        self.write_seconds(i64::MAX, &mut log);
        drop(log);
        Measurements {
            windows: self.windows,
            counts: self.counts,
            metrics: self.metrics,
            last_finished_us: self.last_finished_us,
            timeline: self.timeline,
            hlog,
            ledger: self.ledger,
            late_samples: self.late_samples,
            errors: self.errors,
            faults: self.faults,
            frozen: self.frozen,
            orphaned: self.orphaned,
            probes: self.probes,
            fatal: self.fatal,
            db_samples: self.db_samples,
            harness: self.harness,
            claim_probes: self.claim_probes,
            analyzed: self.analyzed,
            library_workers: self.library_workers,
        }
    }
}

#[cfg(test)]
mod tests;
