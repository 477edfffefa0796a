//! The load generator watching itself. A timer task asks to wake every 10 ms and notes how
//! late the runtime woke it (scheduling lag), and once a second it reads how much CPU this
//! process used and how busy the whole machine was (Linux `/proc`), and reports it as a
//! [`HarnessSample`].

use super::event::Event;
use super::harness::{HarnessSample, busy_share, machine_ticks, process_cpu_s};
use crate::clock::RunClock;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

/// How often the timer task asks to be woken.
const TICK: Duration = Duration::from_millis(10);
/// How often a sample is reported.
const REPORT_EVERY: Duration = Duration::from_secs(1);

pub struct HarnessMonitor {
    pub clock: RunClock,
    pub events: UnboundedSender<Event>,
    /// A wake-up later than this is late (the producers' `late_after`).
    pub late_after: Duration,
}

impl HarnessMonitor {
    /// Samples until `stop` is cancelled.
    pub async fn run(self, stop: CancellationToken) {
        let late_after_us = self.late_after.as_micros() as u64;
        let mut sample = HarnessSample::default();
        let mut cpu = process_cpu_s();
        let mut machine = machine_ticks();
        let mut since = self.clock.now_us();
        loop {
            let due = self.clock.now_us() + TICK.as_micros() as u64;
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = tokio::time::sleep(TICK) => {}
            }
            let now = self.clock.now_us();
            let lag = now.saturating_sub(due);
            sample.ticks += 1;
            sample.late_ticks += u64::from(lag > late_after_us);
            sample.max_lag_us = sample.max_lag_us.max(lag);
            if now - since < REPORT_EVERY.as_micros() as u64 {
                continue;
            }
            let (cpu_now, machine_now) = (process_cpu_s(), machine_ticks());
            sample.at_us = now;
            sample.interval_s = (now - since) as f64 / 1e6;
            sample.process_cpu_s = cpu.zip(cpu_now).map(|(a, b)| (b - a).max(0.0));
            sample.machine_busy = machine.zip(machine_now).and_then(|(a, b)| busy_share(a, b));
            let _ = self
                .events
                .send(Event::HarnessSample(std::mem::take(&mut sample)));
            (cpu, machine, since) = (cpu_now, machine_now, now);
        }
    }
}
