//! The load generator watching itself and its machine. A timer task asks to wake every 10 ms
//! and notes how late the runtime woke it (scheduling lag), and once a second it reads how
//! much CPU this process, its child processes, the server and everything else used, and how
//! busy the whole machine was (Linux `/proc`), and reports it as a [`HarnessSample`].

use super::event::Event;
use super::harness::{HarnessSample, process_cpu_s};
use super::machine::{MachineTicks, ProcessTable, cpu_use};
use crate::clock::RunClock;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often the timer task asks to be woken.
const TICK: Duration = Duration::from_millis(10);
/// How often a sample is reported.
const REPORT_EVERY: Duration = Duration::from_secs(1);

/// The server's main process id right now, when the run started the server (it changes when
/// the server is restarted).
pub type ServerPid = Arc<dyn Fn() -> Option<u32> + Send + Sync>;

pub struct HarnessMonitor {
    pub clock: RunClock,
    pub events: crate::metrics::EventSink,
    /// A wake-up later than this is late (the producers' `late_after`).
    pub late_after: Duration,
    /// The server's process, whose CPU is told apart from everyone else's.
    pub server: Option<ServerPid>,
}

/// The machine's figures as of one reading.
struct Reading {
    cpu_s: Option<f64>,
    ticks: Option<MachineTicks>,
    table: Option<ProcessTable>,
}

impl Reading {
    /// Reads `/proc` off the runtime's threads: the process table is a few hundred files.
    async fn take() -> Reading {
        tokio::task::spawn_blocking(|| Reading {
            cpu_s: process_cpu_s(),
            ticks: MachineTicks::read(),
            table: ProcessTable::read(),
        })
        .await
        .unwrap_or(Reading {
            cpu_s: None,
            ticks: None,
            table: None,
        })
    }
}

impl HarnessMonitor {
    /// Samples until `stop` is cancelled.
    pub async fn run(self, stop: CancellationToken) {
        let late_after_us = self.late_after.as_micros() as u64;
        let mut sample = HarnessSample::default();
        let mut last = Reading::take().await;
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
            let reading = Reading::take().await;
            sample.at_us = now;
            sample.interval_s = (now - since) as f64 / 1e6;
            self.fill(&mut sample, &last, &reading);
            let _ = self
                .events
                .send(Event::HarnessSample(std::mem::take(&mut sample)));
            (last, since) = (reading, now);
        }
    }

    /// The interval's CPU figures, from the readings at its two ends.
    fn fill(&self, sample: &mut HarnessSample, before: &Reading, now: &Reading) {
        sample.process_cpu_s = before.cpu_s.zip(now.cpu_s).map(|(a, b)| (b - a).max(0.0));
        let machine = before.ticks.zip(now.ticks);
        sample.machine_busy = machine.and_then(|(a, b)| b.busy_share(&a));
        let (Some((busy_s, steal)), Some(a), Some(b)) = (
            machine.and_then(|(a, b)| b.since(&a)),
            &before.table,
            &now.table,
        ) else {
            return;
        };
        let server = self.server.as_ref().and_then(|pid| pid());
        let used = cpu_use(a, b, std::process::id(), server);
        let accounted =
            sample.process_cpu_s.unwrap_or(0.0) + used.children_s + used.server_s.unwrap_or(0.0);
        sample.steal = Some(steal);
        sample.children_cpu_s = Some(used.children_s);
        sample.server_cpu_s = used.server_s;
        sample.others_cpu_s = Some((busy_s - accounted).max(0.0));
        sample.busiest_others = used.busiest_others;
    }
}
