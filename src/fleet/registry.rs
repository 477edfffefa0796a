//! The worker registry: what fault injectors may know about and do to consumer workers
//! without reaching into them: which process each slot runs in, which jobs it holds, and an
//! armed crash for task workers, and a pause every task worker waits out between jobs.

use crate::metrics::JobId;
use crate::scenario::CrashPoint;
use rand::Rng;
use rand::seq::SliceRandom;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::time::Duration;

#[derive(Debug, Default)]
pub struct WorkerSlot {
    /// Pid of the slot's worker process; 0 for task workers and while restarting.
    pid: AtomicI32,
    /// Jobs the worker holds (one for the harness's workers; a library's may hold several).
    held: Mutex<Vec<JobId>>,
    /// A crash armed by `crash_workers`, taken by the worker when it reaches that point.
    crash: Mutex<Option<CrashPoint>>,
}

#[derive(Debug)]
pub struct WorkerRegistry {
    slots: Vec<WorkerSlot>,
    /// Until when (run-clock µs) task workers take no job: `pause_workers`.
    paused_until_us: AtomicU64,
}

impl WorkerRegistry {
    pub fn new(count: usize) -> WorkerRegistry {
        WorkerRegistry {
            slots: (0..count).map(|_| WorkerSlot::default()).collect(),
            paused_until_us: AtomicU64::new(0),
        }
    }

    /// Task workers take no job until `until_us` on the run clock.
    pub fn pause_until(&self, until_us: u64) {
        self.paused_until_us.store(until_us, Ordering::Release);
    }

    /// How long a task worker must still wait before its next job at `now_us`, if paused.
    pub fn paused_for(&self, now_us: u64) -> Option<Duration> {
        let until = self.paused_until_us.load(Ordering::Acquire);
        (until > now_us).then(|| Duration::from_micros(until - now_us))
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    pub fn set_pid(&self, slot: u32, pid: i32) {
        self.slots[slot as usize].pid.store(pid, Ordering::Release);
    }

    pub fn pid(&self, slot: u32) -> i32 {
        self.slots[slot as usize].pid.load(Ordering::Acquire)
    }

    pub fn set_in_flight(&self, slot: u32, job: Option<JobId>) {
        self.set_held(slot, job.into_iter().collect());
    }

    pub fn set_held(&self, slot: u32, jobs: Vec<JobId>) {
        *self.slots[slot as usize]
            .held
            .lock()
            .expect("registry lock") = jobs;
    }

    /// The jobs the slot's worker holds.
    pub fn held(&self, slot: u32) -> Vec<JobId> {
        self.slots[slot as usize]
            .held
            .lock()
            .expect("registry lock")
            .clone()
    }

    /// Arms a crash at `point` on `count` distinct task workers chosen at random.
    pub fn arm_crashes(&self, count: usize, point: CrashPoint, rng: &mut impl Rng) -> usize {
        let mut slots: Vec<usize> = (0..self.slots.len()).collect();
        slots.shuffle(rng);
        let mut armed = 0;
        for i in slots.into_iter().take(count) {
            if let Ok(mut c) = self.slots[i].crash.lock() {
                *c = Some(point);
                armed += 1;
            }
        }
        armed
    }

    /// True (once) if a crash is armed for this slot at `point`.
    pub fn take_crash(&self, slot: u32, point: CrashPoint) -> bool {
        match self.slots[slot as usize].crash.lock() {
            Ok(mut c) if *c == Some(point) => {
                *c = None;
                true
            }
            _ => false,
        }
    }

    /// Up to `count` running worker processes `(slot, pid)`, chosen at random among those
    /// holding a job first.
    pub fn pick_processes(&self, count: usize, rng: &mut impl Rng) -> Vec<(u32, i32)> {
        let mut running: Vec<(u32, i32, bool)> = (0..self.slots.len() as u32)
            .filter_map(|s| {
                let pid = self.pid(s);
                (pid > 0).then(|| (s, pid, !self.held(s).is_empty()))
            })
            .collect();
        running.shuffle(rng);
        running.sort_by_key(|(_, _, busy)| !busy);
        running
            .into_iter()
            .take(count)
            .map(|(s, pid, _)| (s, pid))
            .collect()
    }
}
