//! The load generator's figures of itself: a second of its timer's lateness, its CPU and the
//! machine's (taken by `monitor`), and their summary over a window. When producers miss
//! their schedule while their own runtime is late just as often, the lateness is the
//! harness's, not the queue's: the run is limited by the load generator. Also the machine's
//! size (cores, memory) that every summary records.

use serde::{Deserialize, Serialize};

/// One second of the harness's own figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HarnessSample {
    /// End of the sampled interval, µs on the run clock.
    pub at_us: u64,
    pub interval_s: f64,
    /// Timer wake-ups in the interval, and those later than `late_after`.
    pub ticks: u64,
    pub late_ticks: u64,
    /// The latest wake-up, µs after it was due.
    pub max_lag_us: u64,
    /// CPU seconds this process used (all its threads), when `/proc` can tell.
    pub process_cpu_s: Option<f64>,
    /// Share of the machine's CPU time that was busy (0–1), when `/proc` can tell.
    pub machine_busy: Option<f64>,
}

/// User + system CPU seconds of this process, from `/proc/self/stat` (Linux's USER_HZ is
/// 100 on every architecture it exposes to user space).
pub(super) fn process_cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    parse_process_cpu_s(&stat)
}

fn parse_process_cpu_s(stat: &str) -> Option<f64> {
    // The command name (field 2) may hold spaces; the fields after its ')' are fixed.
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime are fields 14 and 15 overall: 12th and 13th after the name.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// (busy, total) CPU ticks of the whole machine, from `/proc/stat`.
pub(super) fn machine_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    parse_machine_ticks(&stat)
}

fn parse_machine_ticks(stat: &str) -> Option<(u64, u64)> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is inside user already).
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3)? + v.get(4).copied().unwrap_or(0);
    Some((total - idle, total))
}

pub(super) fn busy_share(a: (u64, u64), b: (u64, u64)) -> Option<f64> {
    let total = b.1.checked_sub(a.1)?;
    let busy = b.0.checked_sub(a.0)?;
    (total > 0).then(|| busy as f64 / total as f64)
}

/// The harness's figures over a window (the measured phases).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HarnessSummary {
    /// Share of the timer task's wake-ups later than `late_after`, %.
    pub timer_late_pct: f64,
    /// The latest wake-up, ms after it was due.
    pub timer_max_lag_ms: f64,
    /// Cores' worth of CPU this process used on average (1.0 = one core busy).
    pub process_cores: Option<f64>,
    /// Share of the machine's CPU that was busy on average, %.
    pub machine_busy_pct: Option<f64>,
    /// Cores the machine has.
    pub machine_cores: usize,
}

impl HarnessSummary {
    /// Combines the samples that ended inside `[from_us, to_us]`.
    pub fn over(samples: &[HarnessSample], from_us: u64, to_us: u64) -> Option<HarnessSummary> {
        let inside: Vec<&HarnessSample> = samples
            .iter()
            .filter(|s| s.at_us > from_us && s.at_us <= to_us)
            .collect();
        let ticks: u64 = inside.iter().map(|s| s.ticks).sum();
        if ticks == 0 {
            return None;
        }
        let seconds: f64 = inside.iter().map(|s| s.interval_s).sum();
        let cpu: Option<f64> = inside.iter().map(|s| s.process_cpu_s).sum();
        let busy: Option<Vec<f64>> = inside.iter().map(|s| s.machine_busy).collect();
        Some(HarnessSummary {
            timer_late_pct: 100.0 * inside.iter().map(|s| s.late_ticks).sum::<u64>() as f64
                / ticks as f64,
            timer_max_lag_ms: inside.iter().map(|s| s.max_lag_us).max().unwrap_or(0) as f64 / 1e3,
            process_cores: cpu.map(|c| c / seconds.max(1e-9)),
            machine_busy_pct: busy
                .filter(|b| !b.is_empty())
                .map(|b| 100.0 * b.iter().sum::<f64>() / b.len() as f64),
            machine_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        })
    }

    /// The harness's own runtime was late as often as the rule allows the producers to be
    /// (1%): it could not keep its own timers, so it could not keep the producers' schedule.
    pub fn saturated(&self) -> bool {
        self.timer_late_pct > 1.0
    }

    /// The figures in a few words, for the verdict.
    pub fn describe(&self) -> String {
        let mut parts = vec![format!(
            "the harness's own 10 ms timer woke late {:.1}% of the time (latest {:.0} ms)",
            self.timer_late_pct, self.timer_max_lag_ms
        )];
        if let Some(c) = self.process_cores {
            parts.push(format!("it used {c:.2} cores"));
        }
        if let Some(b) = self.machine_busy_pct {
            parts.push(format!(
                "the machine's {} cores were {b:.0}% busy",
                self.machine_cores
            ));
        }
        parts.join(", ")
    }
}

/// The cores this process may use (0 when unknown).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(0, |n| n.get())
}

/// The machine's total memory, from /proc/meminfo (0 when unknown).
pub fn memory_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))?
                .split_whitespace()
                .nth(1)?
                .parse::<u64>()
                .ok()
        })
        .map_or(0, |kb| kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_files_parse() {
        let stat = "4242 (dbq bench) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 8 0 100 0 0";
        assert_eq!(parse_process_cpu_s(stat), Some(3.0));
        let machine = "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4\n";
        assert_eq!(parse_machine_ticks(machine), Some((150, 1000)));
        assert_eq!(busy_share((150, 1000), (300, 1200)), Some(0.75));
    }

    #[test]
    fn a_window_sums_its_samples() {
        let s = |at_us, late_ticks, cpu| HarnessSample {
            at_us,
            interval_s: 1.0,
            ticks: 100,
            late_ticks,
            max_lag_us: 7_000,
            process_cpu_s: Some(cpu),
            machine_busy: Some(0.5),
        };
        let samples = [
            s(1_000_000, 50, 9.0),
            s(2_000_000, 2, 0.5),
            s(3_000_000, 0, 0.5),
        ];
        let w = HarnessSummary::over(&samples, 1_000_000, 3_000_000).unwrap();
        assert_eq!(w.timer_late_pct, 1.0);
        assert_eq!(w.process_cores, Some(0.5));
        assert_eq!(w.machine_busy_pct, Some(50.0));
        assert!(!w.saturated());
        assert!(HarnessSummary::over(&samples, 3_000_000, 4_000_000).is_none());
    }

    /// summary.json must read back exactly as written (`report DIR` and `compare` read it):
    /// serde_json parses floats exactly only with its `float_roundtrip` feature.
    #[test]
    fn figures_read_back_exactly() {
        let mut x = 0.123_456_789_f64;
        for i in 0..10_000 {
            x = (x * 3.7 + i as f64 / 7.0).fract() * 100.0;
            let s = HarnessSummary {
                timer_late_pct: x,
                timer_max_lag_ms: x / 3.0,
                process_cores: Some(x / 97.0),
                machine_busy_pct: Some(x * 0.7),
                machine_cores: 2,
            };
            let back: HarnessSummary =
                serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
            assert_eq!(back, s);
        }
    }
}
