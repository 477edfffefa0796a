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
    /// CPU seconds of the harness's child processes (worker processes, a library's workers).
    #[serde(default)]
    pub children_cpu_s: Option<f64>,
    /// CPU seconds of the server's processes, when the run started the server.
    #[serde(default)]
    pub server_cpu_s: Option<f64>,
    /// CPU seconds of everything else on the machine: its busy time less the harness's,
    /// its children's and the server's.
    #[serde(default)]
    pub others_cpu_s: Option<f64>,
    /// The busiest of those other processes, by name, with their CPU seconds (busiest
    /// first, a few).
    #[serde(default)]
    pub busiest_others: Vec<(String, f64)>,
    /// Share of the machine's time its hypervisor took (steal), 0–1.
    #[serde(default)]
    pub steal: Option<f64>,
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

/// A timer wake-up at least this late is a stall of the load machine: the harness could not
/// run for that long, so every clock it keeps (schedules, latencies, the bystander) stalled
/// with it. Far beyond what sharing its cores with a server costs it (a few ms).
pub const STALL_MS: f64 = 100.0;

/// The harness's figures over a window (the measured phases, or one of them).
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
    /// Cores' worth of CPU the harness's child processes used (worker processes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub children_cores: Option<f64>,
    /// Cores' worth of CPU the server's processes used, when the run started the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cores: Option<f64>,
    /// Cores' worth of CPU everything else on the machine used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others_cores: Option<f64>,
    /// The busiest other processes by name, and the cores they used (busiest first, a few).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub busiest_others: Vec<(String, f64)>,
    /// Share of the machine's time its hypervisor took, %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_pct: Option<f64>,
    /// The seconds in which the timer woke at least [`STALL_MS`] late: the load machine
    /// stalled.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stalls: Vec<Stall>,
}

/// One second in which the harness stalled.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stall {
    /// When the second ended, seconds after the window's start.
    pub at_s: f64,
    /// How late the timer woke, ms.
    pub lag_ms: f64,
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
        let busy: Option<Vec<f64>> = inside.iter().map(|s| s.machine_busy).collect();
        let stalls = inside
            .iter()
            .filter(|s| s.max_lag_us as f64 / 1e3 >= STALL_MS)
            .map(|s| Stall {
                at_s: (s.at_us - from_us) as f64 / 1e6,
                lag_ms: s.max_lag_us as f64 / 1e3,
            })
            .collect();
        Some(HarnessSummary {
            timer_late_pct: 100.0 * inside.iter().map(|s| s.late_ticks).sum::<u64>() as f64
                / ticks as f64,
            timer_max_lag_ms: inside.iter().map(|s| s.max_lag_us).max().unwrap_or(0) as f64 / 1e3,
            process_cores: cores_of(&inside, |s| s.process_cpu_s),
            machine_busy_pct: busy
                .filter(|b| !b.is_empty())
                .map(|b| 100.0 * b.iter().sum::<f64>() / b.len() as f64),
            machine_cores: cores(),
            children_cores: cores_of(&inside, |s| s.children_cpu_s),
            server_cores: cores_of(&inside, |s| s.server_cpu_s),
            others_cores: cores_of(&inside, |s| s.others_cpu_s),
            busiest_others: busiest(&inside),
            steal_pct: mean_of(&inside, |s| s.steal).map(|x| 100.0 * x),
            stalls,
        })
    }

    /// The harness's own runtime was late as often as the rule allows the producers to be
    /// (1%): it could not keep its own timers, so it could not keep the producers' schedule.
    pub fn saturated(&self) -> bool {
        self.timer_late_pct > 1.0
    }

    /// The cores of the machine the harness and its child processes used together.
    pub fn load_machine_cores(&self) -> Option<f64> {
        Some(self.process_cores? + self.children_cores.unwrap_or(0.0))
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

/// Cores' worth of CPU over the samples that have the figure (`None` when none has it).
fn cores_of(inside: &[&HarnessSample], f: impl Fn(&HarnessSample) -> Option<f64>) -> Option<f64> {
    let with: Vec<(f64, f64)> = inside
        .iter()
        .filter_map(|s| Some((f(s)?, s.interval_s)))
        .collect();
    let seconds: f64 = with.iter().map(|(_, i)| i).sum();
    (seconds > 0.0).then(|| with.iter().map(|(c, _)| c).sum::<f64>() / seconds)
}

fn mean_of(inside: &[&HarnessSample], f: impl Fn(&HarnessSample) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = inside.iter().filter_map(|s| f(s)).collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The other processes that used the most CPU over the window, by name, in cores.
fn busiest(inside: &[&HarnessSample]) -> Vec<(String, f64)> {
    let mut by_name: std::collections::BTreeMap<&str, f64> = Default::default();
    for s in inside {
        for (name, cpu) in &s.busiest_others {
            *by_name.entry(name).or_default() += cpu;
        }
    }
    let seconds: f64 = inside.iter().map(|s| s.interval_s).sum();
    if seconds <= 0.0 {
        return Vec::new();
    }
    let mut all: Vec<(String, f64)> = by_name
        .into_iter()
        .map(|(name, cpu)| (name.to_string(), cpu / seconds))
        .collect();
    all.sort_by(|a, b| b.1.total_cmp(&a.1));
    all.truncate(super::machine::NAMED);
    all
}

impl HarnessSummary {
    /// The busiest other process, and the cores it used.
    pub fn busiest_other(&self) -> Option<&(String, f64)> {
        self.busiest_others.first()
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
            ..HarnessSample::default()
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
                server_cores: Some(x / 51.0),
                busiest_others: vec![("yes".into(), x / 13.0)],
                stalls: vec![Stall {
                    at_s: x / 7.0,
                    lag_ms: x * 11.0,
                }],
                ..HarnessSummary::default()
            };
            let back: HarnessSummary =
                serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
            assert_eq!(back, s);
        }
    }
}
