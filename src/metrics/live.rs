//! Counters the recorder keeps current while a run goes on, for the progress display and the
//! drain decision. Readers get a consistent-enough snapshot; final figures come from the
//! recorder's `Measurements`, not from here.

use super::event::JobId;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct LiveStats {
    enqueued: AtomicU64,
    completed: AtomicU64,
    failed: AtomicU64,
    dead_lettered: AtomicU64,
    outstanding: AtomicI64,
    queue_depth: AtomicI64,
    /// Partitions a workers' group stopped reading at the last sample, and the longest
    /// stall then, ms (a queue shared by a group, Kafka).
    stalled_partitions: AtomicI64,
    stalled_for_ms: AtomicI64,
    lag_max_us: AtomicU64,
    producers_stopped: AtomicBool,
    /// In-doubt insert keys and in-doubt open jobs, for the drain to settle from the table.
    unresolved: Mutex<(Vec<String>, Vec<JobId>)>,
    /// The first permanent database error reported: the run must stop.
    fatal: Mutex<Option<String>>,
}

/// A copy of the live counters at one moment.
#[derive(Debug, Clone, Copy, Default)]
pub struct LiveSnapshot {
    pub enqueued: u64,
    pub completed: u64,
    pub failed: u64,
    pub dead_lettered: u64,
    /// Jobs committed by producers (or prefill) and not yet done or dead-lettered.
    pub outstanding: i64,
    /// Last `pending` count sampled from the database (-1 before the first sample).
    pub queue_depth: i64,
    /// Partitions the workers' group stopped reading, and for how long, ms (last sample).
    pub stalled_partitions: i64,
    pub stalled_for_ms: i64,
    /// Largest schedule lag seen in the last finished second, µs.
    pub lag_max_us: u64,
    pub producers_stopped: bool,
}

impl LiveStats {
    pub fn new() -> Self {
        let s = LiveStats::default();
        s.queue_depth.store(-1, Ordering::Relaxed);
        s
    }

    pub(super) fn add_enqueued(&self) {
        self.add_enqueued_n(1);
    }
    pub(super) fn add_enqueued_n(&self, n: u64) {
        self.enqueued.fetch_add(n, Ordering::Relaxed);
    }
    pub(super) fn add_completed(&self) {
        self.completed.fetch_add(1, Ordering::Relaxed);
    }
    pub(super) fn add_failed(&self, dead: bool) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        if dead {
            self.dead_lettered.fetch_add(1, Ordering::Relaxed);
        }
    }
    pub(super) fn add_dead_lettered(&self) {
        self.dead_lettered.fetch_add(1, Ordering::Relaxed);
    }
    pub(super) fn set_unresolved(&self, u: (Vec<String>, Vec<JobId>)) {
        if let Ok(mut g) = self.unresolved.lock() {
            *g = u;
        }
    }
    /// In-doubt insert keys and in-doubt open jobs, as of the recorder's last tick.
    pub fn unresolved(&self) -> (Vec<String>, Vec<JobId>) {
        self.unresolved
            .lock()
            .map(|g| g.clone())
            .unwrap_or_default()
    }
    pub(super) fn set_outstanding(&self, n: i64) {
        self.outstanding.store(n, Ordering::Relaxed);
    }
    pub(super) fn set_queue_depth(&self, n: i64) {
        self.queue_depth.store(n, Ordering::Relaxed);
    }
    pub(super) fn set_stall(&self, partitions: i64, ms: i64) {
        self.stalled_partitions.store(partitions, Ordering::Relaxed);
        self.stalled_for_ms.store(ms, Ordering::Relaxed);
    }
    pub(super) fn set_lag_max(&self, us: u64) {
        self.lag_max_us.store(us, Ordering::Relaxed);
    }
    pub(super) fn set_producers_stopped(&self) {
        self.producers_stopped.store(true, Ordering::Release);
    }

    pub fn snapshot(&self) -> LiveSnapshot {
        LiveSnapshot {
            enqueued: self.enqueued.load(Ordering::Relaxed),
            completed: self.completed.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            dead_lettered: self.dead_lettered.load(Ordering::Relaxed),
            outstanding: self.outstanding.load(Ordering::Relaxed),
            queue_depth: self.queue_depth.load(Ordering::Relaxed),
            stalled_partitions: self.stalled_partitions.load(Ordering::Relaxed),
            stalled_for_ms: self.stalled_for_ms.load(Ordering::Relaxed),
            lag_max_us: self.lag_max_us.load(Ordering::Relaxed),
            producers_stopped: self.producers_stopped.load(Ordering::Acquire),
        }
    }

    /// True once every producer has stopped and every job they committed has finished, as
    /// far as the events processed so far show.
    pub(super) fn set_fatal(&self, error: &str) {
        let mut f = self.fatal.lock().unwrap_or_else(|e| e.into_inner());
        f.get_or_insert_with(|| error.to_string());
    }

    /// The permanent error that must stop the run, if one was reported.
    pub fn fatal(&self) -> Option<String> {
        self.fatal.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn drained(&self) -> bool {
        let s = self.snapshot();
        s.producers_stopped && s.outstanding <= 0
    }
}
