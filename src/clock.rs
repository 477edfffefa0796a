//! The run clock: one monotonic time base for every measurement of a run.
//!
//! Readings are microseconds since the run started, taken from the machine's
//! `CLOCK_MONOTONIC`. That clock is shared by every process on the machine, so a job's
//! intended enqueue time written into its payload by a producer can be compared with the
//! time a consumer (in this process or a child process) finishes it. Wall-clock time is used
//! only to label results (start/end timestamps), never to measure durations.

use nix::time::{ClockId, clock_gettime};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunClock {
    epoch_ns: u64,
}

fn monotonic_ns() -> u64 {
    // CLOCK_MONOTONIC cannot fail on Linux with a valid clock id.
    let ts = clock_gettime(ClockId::CLOCK_MONOTONIC)
        .unwrap_or_else(|_| nix::sys::time::TimeSpec::new(0, 0));
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}

impl RunClock {
    /// Starts a run clock at the current instant.
    pub fn start() -> Self {
        RunClock {
            epoch_ns: monotonic_ns(),
        }
    }

    /// The run clock of another process of the same run (see [`RunClock::epoch_ns`]).
    pub fn from_epoch(epoch_ns: u64) -> Self {
        RunClock { epoch_ns }
    }

    /// The raw `CLOCK_MONOTONIC` reading at the start of the run.
    pub fn epoch_ns(&self) -> u64 {
        self.epoch_ns
    }

    /// Microseconds since the run started.
    pub fn now_us(&self) -> u64 {
        monotonic_ns().saturating_sub(self.epoch_ns) / 1_000
    }

    /// How long until the run-clock reading `at_us` (zero if it has passed).
    pub fn until(&self, at_us: u64) -> Duration {
        Duration::from_micros(at_us.saturating_sub(self.now_us()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_never_go_backwards() {
        let clock = RunClock::start();
        let a = clock.now_us();
        std::thread::sleep(Duration::from_millis(2));
        let b = clock.now_us();
        assert!(b >= a + 1_000, "{a} then {b}");
    }
}
